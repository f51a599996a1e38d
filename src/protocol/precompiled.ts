import type { ValidateFunction } from 'ajv';
import { hash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { canonicalJson } from './canonical-json.ts';

// The build (scripts/build.mjs, src/config/precompile.ts) writes Ajv's standalone validators of
// the built-in schemas next to the bundle, so that a daemon with only built-in tools never loads
// Ajv or compiles a schema: loading Ajv and compiling was a third of `vaultd run`'s start-up, or
// the first call's wait when done on first use (bench/README.md, item 30).

const require = createRequire(import.meta.url);

/** Precompiled validators, by {@link schemaKey}. */
export type PrecompiledValidators = Readonly<Record<string, ValidateFunction>>;

/**
 * The key of a schema among the precompiled validators: a hash of its canonical JSON, so a
 * validator is only ever used for the very schema it was made from.
 * @param schema a JSON Schema.
 */
export function schemaKey(schema: unknown): string {
  return `s${hash('sha256', canonicalJson(schema), 'hex').slice(0, 32)}`;
}

/** One module of precompiled validators, loaded on first lookup. */
export class PrecompiledSet {
  readonly #file: string;
  #validators: PrecompiledValidators | null | undefined;

  /**
   * @param fileName the module's name next to the bundle (`config-validators.cjs`).
   * @param moduleUrl `import.meta.url` of the module that looks validators up.
   */
  constructor(fileName: string, moduleUrl: string) {
    this.#file = fileURLToPath(new URL(`./${fileName}`, moduleUrl));
  }

  /**
   * (Re)load the validators.
   * @param file where to look; next to the bundle unless a test says otherwise.
   * @returns them, or null when there is no such file (vaultd runs from its sources).
   */
  load(file = this.#file): PrecompiledValidators | null {
    this.#validators = existsSync(file) ? (require(file) as PrecompiledValidators) : null;
    return this.#validators;
  }

  /**
   * The validator made for this very schema, if the build made one.
   * @param schema a JSON Schema.
   */
  find(schema: unknown): ValidateFunction | undefined {
    return this.named(schemaKey(schema));
  }

  /**
   * The validator the build exported under this name, if any.
   * @param key its export's name.
   */
  named(key: string): ValidateFunction | undefined {
    if (this.#validators === undefined) this.load();
    return this.#validators?.[key];
  }
}
