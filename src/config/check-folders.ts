import { isAbsolute, win32 } from 'node:path';
import { quoteValue } from './config-error.ts';
import type { FolderNames } from './types.ts';

/**
 * Check that every folder is a plain path relative to the vault (no `..`, `.`, dot folders,
 * absolute paths or backslashes), that no two name the same folder (compared case-insensitively,
 * as macOS and Windows do) and that none lies inside another (a watched inbox must not contain
 * an archive).
 * @param folders the folder names after defaults.
 * @returns one sentence per problem.
 */
export function checkFolders(folders: FolderNames): string[] {
  const problems: string[] = [];
  const valid: [key: string, name: string][] = [];
  for (const [key, name] of Object.entries(folders) as [string, unknown][]) {
    if (typeof name !== 'string') continue; // reported by the schema
    const problem = checkFolderName(name);
    if (problem === null) valid.push([key, name]);
    else problems.push(`config key 'folders.${key}' ${problem} (got ${quoteValue(name)})`);
  }
  for (let i = 0; i < valid.length; i += 1) {
    for (let j = i + 1; j < valid.length; j += 1) {
      const [keyA, nameA] = valid[i] as [string, string];
      const [keyB, nameB] = valid[j] as [string, string];
      const a = nameA.toLowerCase();
      const b = nameB.toLowerCase();
      if (a === b) {
        problems.push(
          `config keys 'folders.${keyA}' and 'folders.${keyB}' name the same folder ${quoteValue(nameA)}`,
        );
      } else if (b.startsWith(`${a}/`) || a.startsWith(`${b}/`)) {
        const [inner, outer] = a.length > b.length ? [keyA, keyB] : [keyB, keyA];
        problems.push(
          `config key 'folders.${inner}' names a folder inside 'folders.${outer}'; folders must not nest`,
        );
      }
    }
  }
  return problems;
}

function checkFolderName(name: string): string | null {
  if (isAbsolute(name) || win32.isAbsolute(name))
    return 'must be relative to the vault, not an absolute path';
  if (name.includes('\\')) return "must use '/' between folder names, not '\\'";
  const segments = name.split('/');
  if (segments.some((s) => s === '..')) return "must not contain '..'";
  if (segments.some((s) => s === '' || s === '.'))
    return "must be a plain folder name (no empty or '.' parts)";
  if (segments.some((s) => s.startsWith('.')))
    return 'must not start with a dot (dot folders are ignored)';
  return null;
}
