import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';

// ajv-formats is CommonJS; under nodenext its default import is the module object.
const addFormats = addFormatsModule.default;

/**
 * The one Ajv instance shared by every tool: all errors reported, defaults applied, no type
 * coercion, unknown keywords tolerated, `verbose` so messages can quote the offending value.
 */
export const ajv: Ajv = new Ajv({
  allErrors: true,
  useDefaults: true,
  coerceTypes: false,
  strict: false,
  verbose: true,
});
addFormats(ajv);

export type { ValidateFunction };
