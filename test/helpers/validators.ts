import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before } from 'node:test';
import type { ErrorObject, ValidateFunction } from 'ajv';

const root = new URL('../..', import.meta.url).pathname;

/**
 * A module of precompiled validators for the tests of one file: written before them, inside the
 * checkout (so that its `require('ajv/…')` finds the dependencies), and removed after them.
 * @param name the module's file name.
 * @param source its text (`configValidatorsSource`, `toolValidatorsSource`).
 * @returns the module's path, once the tests run.
 */
export function validatorsModuleForTests(name: string, source: () => string): () => string {
  const dir = join(root, 'node_modules', '.cache', `vaultd-${name}-${process.pid}`);
  const file = join(dir, name);
  before(async () => {
    await mkdir(dir, { recursive: true });
    await writeFile(file, source());
  });
  after(() => rm(dir, { recursive: true, force: true }));
  return () => file;
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
