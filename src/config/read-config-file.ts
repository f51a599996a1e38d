import { readFileSync } from 'node:fs';
import { LineCounter, parseDocument } from 'yaml';
import { ConfigError } from './config-error.ts';

/**
 * Read and parse a YAML config file into plain data, with the `core` schema only (no custom or
 * language tags are ever evaluated). An empty file is `{}`.
 * @param file path of the file.
 * @throws ConfigError when the file is missing, unreadable, not YAML, or not a mapping.
 */
export function readConfigFile(file: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const reason = code === 'ENOENT' ? 'the file does not exist' : (error as Error).message;
    throw new ConfigError([`cannot read config file: ${reason}`], file);
  }
  const lineCounter = new LineCounter();
  const document = parseDocument(text, {
    schema: 'core',
    uniqueKeys: true,
    prettyErrors: false,
    lineCounter,
  });
  if (document.errors.length > 0) {
    throw new ConfigError(
      document.errors.map((e) => {
        const place = lineCounter.linePos(e.pos[0]);
        return `line ${place.line}, column ${place.col}: ${e.message.split('\n')[0] ?? e.code}`;
      }),
      file,
    );
  }
  const data: unknown = document.toJS({ maxAliasCount: 100 });
  if (data === null || data === undefined) return {};
  if (typeof data !== 'object' || Array.isArray(data)) {
    throw new ConfigError(['the file must be a mapping of config keys to values'], file);
  }
  return data as Record<string, unknown>;
}
