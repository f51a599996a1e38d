import type { ValidateFunction } from 'ajv';
import { hash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
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

/**
 * Load a module of precompiled validators, or null when there is none (vaultd runs from its
 * sources, not from the bundle).
 * @param file the module's path.
 */
export function loadValidators(file: string): PrecompiledValidators | null {
  return existsSync(file) ? (require(file) as PrecompiledValidators) : null;
}
