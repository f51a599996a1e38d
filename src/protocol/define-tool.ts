import { ajv, type ValidateFunction } from './ajv.ts';
import { SAFETY_LEVELS, type JsonSchema, type Tool, type ToolDefinition } from './types.ts';

/** What a tool name must look like: snake_case starting with a letter. */
export const TOOL_NAME_PATTERN = /^[a-z][a-z0-9_]*$/;

/** The JSON Schema types a parameter may declare. */
export const PARAMETER_TYPES: readonly string[] = [
  'string',
  'boolean',
  'number',
  'integer',
  'object',
  'array',
];

const validators = new WeakMap<object, ValidateFunction>();

/**
 * Declare a tool: check its invariants, fill in defaults and compile its argument validator once.
 * Defaults: `categories` [], `required` [], `readOnly` false, `idempotent` false.
 * @param def the tool as its author writes it.
 * @returns the frozen tool, with `inputSchema` (type object, additionalProperties false).
 * @throws Error quoting the bad value for a name that is not snake_case, an undeclared required
 *   parameter, an unknown safety level, a parameter type outside the supported ones, or a
 *   parameter schema or output schema that Ajv cannot compile.
 */
export function defineTool<Args = Record<string, unknown>>(def: ToolDefinition<Args>): Tool<Args> {
  if (typeof def !== 'object' || def === null) {
    throw new Error(`a tool definition must be an object, got ${quote(def)}`);
  }
  const name = checkName(def.name);
  const where = `tool '${name}'`;
  if (typeof def.description !== 'string' || def.description.trim() === '') {
    throw new Error(
      `${where}: description must be a non-empty string, got ${quote(def.description)}`,
    );
  }
  if (!SAFETY_LEVELS.includes(def.safety)) {
    throw new Error(
      `${where}: unknown safety level ${quote(def.safety)}; expected one of: ${SAFETY_LEVELS.join(', ')}`,
    );
  }
  if (typeof def.handler !== 'function') {
    throw new Error(`${where}: handler must be a function, got ${quote(def.handler)}`);
  }
  if (def.normalize !== undefined && typeof def.normalize !== 'function') {
    throw new Error(`${where}: normalize must be a function, got ${quote(def.normalize)}`);
  }
  if (def.preview !== undefined && typeof def.preview !== 'function') {
    throw new Error(`${where}: preview must be a function, got ${quote(def.preview)}`);
  }
  const parameters = checkParameters(where, def.parameters);
  const required = checkStringList(where, 'required', def.required);
  for (const entry of required) {
    if (!Object.hasOwn(parameters, entry)) {
      throw new Error(
        `${where}: required parameter ${quote(entry)} is not declared in parameters` +
          ` (declared: ${Object.keys(parameters).join(', ') || 'none'})`,
      );
    }
  }
  const categories = checkStringList(where, 'categories', def.categories);
  const readOnly = checkFlag(where, 'readOnly', def.readOnly);
  const idempotent = checkFlag(where, 'idempotent', def.idempotent);
  if (def.rateLimit !== undefined) checkRateLimit(where, def.rateLimit);

  const inputSchema = deepFreeze({
    type: 'object',
    properties: parameters,
    required: [...required],
    additionalProperties: false,
  });
  const validate = compileInput(where, inputSchema, parameters);
  const outputSchema =
    def.outputSchema === undefined
      ? undefined
      : checkSchema(where, 'outputSchema', def.outputSchema);
  const configSchema =
    def.configSchema === undefined
      ? undefined
      : checkSchema(where, 'configSchema', def.configSchema);

  const tool: Tool<Args> = {
    name,
    description: def.description,
    parameters,
    required: Object.freeze([...required]),
    safety: def.safety,
    categories: Object.freeze([...categories]),
    readOnly,
    idempotent,
    inputSchema,
    handler: def.handler,
    ...(outputSchema === undefined ? {} : { outputSchema }),
    ...(configSchema === undefined ? {} : { configSchema }),
    ...(def.rateLimit === undefined ? {} : { rateLimit: Object.freeze({ ...def.rateLimit }) }),
    ...(def.preview === undefined ? {} : { preview: def.preview }),
    ...(def.normalize === undefined ? {} : { normalize: def.normalize }),
  };
  Object.freeze(tool);
  validators.set(tool, validate);
  return tool;
}

/** True when `value` is a tool returned by {@link defineTool}. */
export function isDefinedTool(value: unknown): value is Tool {
  return typeof value === 'object' && value !== null && validators.has(value);
}

/**
 * The compiled argument validator of a tool; compiled once and cached per tool object.
 * @param tool a declared tool (a tool object built by hand is compiled on first use).
 */
export function getValidator(tool: Tool<unknown>): ValidateFunction {
  let validate = validators.get(tool);
  if (validate === undefined) {
    validate = ajv.compile(tool.inputSchema);
    validators.set(tool, validate);
  }
  return validate;
}

function checkName(name: unknown): string {
  if (typeof name !== 'string' || !TOOL_NAME_PATTERN.test(name)) {
    throw new Error(
      `tool name ${quote(name)} is not snake_case: it must match ${String(TOOL_NAME_PATTERN)}`,
    );
  }
  return name;
}

function checkParameters(where: string, parameters: unknown): Record<string, JsonSchema> {
  if (!isPlainObject(parameters)) {
    throw new Error(
      `${where}: parameters must be an object of JSON Schemas keyed by parameter name, got ${quote(parameters)}`,
    );
  }
  const copy = cloneSchema(where, 'parameters', parameters);
  for (const [param, schema] of Object.entries(copy)) {
    if (!isPlainObject(schema)) {
      throw new Error(
        `${where}: parameter '${param}' must be a JSON Schema object, got ${quote(schema)}`,
      );
    }
    const type = schema['type'];
    if (type === undefined) continue;
    const types = Array.isArray(type) ? type : [type];
    for (const t of types) {
      if (typeof t !== 'string' || !PARAMETER_TYPES.includes(t)) {
        throw new Error(
          `${where}: parameter '${param}' has type ${quote(type)}; expected one of: ${PARAMETER_TYPES.join(', ')}`,
        );
      }
    }
  }
  return deepFreeze(copy as Record<string, JsonSchema>);
}

function checkSchema(where: string, field: string, schema: unknown): JsonSchema {
  if (!isPlainObject(schema)) {
    throw new Error(`${where}: ${field} must be a JSON Schema object, got ${quote(schema)}`);
  }
  const copy = deepFreeze(cloneSchema(where, field, schema));
  try {
    ajv.compile(copy);
  } catch (error) {
    throw new Error(
      `${where}: ${field} ${quote(copy)} is not a valid JSON Schema: ${messageOf(error)}`,
      {
        cause: error,
      },
    );
  }
  return copy;
}

function compileInput(
  where: string,
  inputSchema: JsonSchema,
  parameters: Record<string, JsonSchema>,
): ValidateFunction {
  try {
    return ajv.compile(inputSchema);
  } catch (error) {
    // Find the parameter to blame, so the message quotes the schema the author has to fix.
    for (const [param, schema] of Object.entries(parameters)) {
      if (!ajv.validateSchema(schema)) {
        throw new Error(
          `${where}: parameter '${param}' has a schema Ajv cannot compile ${quote(schema)}: ${ajv.errorsText(ajv.errors)}`,
          { cause: error },
        );
      }
    }
    throw new Error(`${where}: the parameters schema cannot be compiled: ${messageOf(error)}`, {
      cause: error,
    });
  }
}

function checkStringList(where: string, field: string, value: unknown): readonly string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) {
    throw new Error(`${where}: ${field} must be an array of strings, got ${quote(value)}`);
  }
  return value as string[];
}

function checkFlag(where: string, field: string, value: unknown): boolean {
  if (value === undefined) return false;
  if (typeof value !== 'boolean') {
    throw new Error(`${where}: ${field} must be true or false, got ${quote(value)}`);
  }
  return value;
}

function checkRateLimit(where: string, limit: unknown): void {
  const ok =
    isPlainObject(limit) &&
    Number.isInteger(limit['max']) &&
    (limit['max'] as number) > 0 &&
    typeof limit['windowMs'] === 'number' &&
    limit['windowMs'] > 0;
  if (!ok) {
    throw new Error(
      `${where}: rateLimit must be {max: positive integer, windowMs: positive number}, got ${quote(limit)}`,
    );
  }
}

function cloneSchema<T>(where: string, field: string, value: T): T {
  try {
    return structuredClone(value);
  } catch (error) {
    throw new Error(`${where}: ${field} must be plain JSON data: ${messageOf(error)}`, {
      cause: error,
    });
  }
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function quote(value: unknown): string {
  if (typeof value === 'function') return 'a function';
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  return text.length > 120 ? `${text.slice(0, 117)}...` : text;
}
