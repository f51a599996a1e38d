import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ErrorObject, ValidateFunction } from 'ajv';

const root = new URL('../..', import.meta.url).pathname;

/**
 * A module of precompiled validators written for a test: inside the checkout, so that its
 * `require('ajv/…')` finds the dependencies.
 * @param name the module's file name.
 * @param source its text (`configValidatorsSource`, `toolValidatorsSource`).
 * @returns its path and a function that removes it.
 */
export async function writeValidatorsModule(
  name: string,
  source: string,
): Promise<{ file: string; remove: () => Promise<void> }> {
  const dir = join(root, 'node_modules', '.cache', `vaultd-${name}-${process.pid}`);
  await mkdir(dir, { recursive: true });
  const file = join(dir, name);
  await writeFile(file, source);
  return { file, remove: () => rm(dir, { recursive: true, force: true }) };
}

/**
 * What a validator makes of a copy of `data`: its verdict, its errors (every field a message is
 * built from) and the data after defaults.
 */
export function validatorOutcome(validate: ValidateFunction, data: unknown) {
  const copy = structuredClone(data);
  const valid = validate(copy);
  const errors = (validate.errors ?? []).map((e: ErrorObject) => ({
    instancePath: e.instancePath,
    schemaPath: e.schemaPath,
    keyword: e.keyword,
    params: e.params,
    message: e.message,
    data: e.data,
    schema: e.schema,
    parentSchema: e.parentSchema,
  }));
  return { valid, errors, data: copy };
}
