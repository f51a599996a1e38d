import { compileSchema, upgradeDraft7, type ValidateFunction } from './ajv.ts';
import type { SchemaCompiler } from './untrusted-schema.ts';
import { isRecord, TOOL_NAME_PATTERN } from './names.ts';
import { SAFETY_LEVELS, type JsonSchema, type Tool, type ToolDefinition } from './types.ts';

export { TOOL_NAME_PATTERN } from './names.ts';

/** The JSON Schema types a parameter may declare. */
export const PARAMETER_TYPES: readonly string[] = [
  'string',
  'boolean',
  'number',
  'integer',
  'object',
  'array',
  'null',
];

const validators = new WeakMap<object, ValidateFunction>();
// Declared tools whose validator is compiled on first use: compiling every built-in tool's schema
// at start-up (most packs are off) was a quarter of `vaultd`'s start. Tools that come from outside
// (plugins, MCP servers, configured commands) are compiled when they load: checkToolSchemas.
const pending = new WeakMap<object, () => ValidateFunction>();

/** Options of {@link defineTool}. */
export interface DefineToolOptions {
  /**
   * What compiles the tool's schemas; default the shared Ajv instance. An MCP server's tools
   * take `makeUntrustedCompiler()`'s (`untrusted-schema.ts`).
   */
  readonly compile?: SchemaCompiler;
}

/**
 * Declare a tool: check its invariants and fill in defaults. Its schemas are compiled by Ajv on
 * first use, or at once by {@link checkToolSchemas} (vaultd does so for every tool of a plugin, an
 * MCP server or a configured command when it loads them).
 * Defaults: `categories` [], `required` [], `readOnly` false, `idempotent` false.
 * @param def the tool as its author writes it: `parameters` (a closed object of named
 *   parameters) or `input` (any JSON Schema of an object, draft-07 or 2020-12).
 * @param options what compiles its schemas; default the shared Ajv instance.
 * @returns the frozen tool, with `inputSchema`.
 * @throws Error quoting the bad value for a name that is not snake_case, an undeclared required
 *   parameter, an unknown safety level, or a parameter type outside the supported ones.
 */
export function defineTool<Args = Record<string, unknown>>(
  def: ToolDefinition<Args>,
  options: DefineToolOptions = {},
): Tool<Args> {
  const compileWith = options.compile ?? compileSchema;
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
  for (const field of ['handler', 'preview', 'normalize'] as const) {
    const value = def[field];
    if ((field === 'handler' || value !== undefined) && typeof value !== 'function') {
      throw new Error(`${where}: ${field} must be a function, got ${quote(value)}`);
    }
  }
  checkEffects(where, def.effects);
  for (const field of ['timeoutMs', 'maxOutputBytes'] as const) {
    const value = def[field];
    if (value !== undefined && (!Number.isInteger(value) || value <= 0)) {
      throw new Error(`${where}: ${field} must be a positive integer, got ${quote(value)}`);
    }
  }
  const categories = checkStringList(where, 'categories', def.categories);
  const readOnly = checkFlag(where, 'readOnly', def.readOnly);
  const idempotent = checkFlag(where, 'idempotent', def.idempotent);
  const openWorld = checkFlag(where, 'openWorld', def.openWorld);
  if (def.cacheable !== undefined) checkFlag(where, 'cacheable', def.cacheable);
  if (def.rateLimit !== undefined) checkRateLimit(where, def.rateLimit);

  let parameters: Record<string, JsonSchema>;
  let required: readonly string[];
  let inputSchema: JsonSchema;
  if (def.input !== undefined) {
    if (def.parameters !== undefined) {
      throw new Error(`${where}: give parameters or input, not both`);
    }
    inputSchema = deepFreeze(checkInput(where, def.input));
    parameters = deepFreeze(
      isRecord(inputSchema['properties'])
        ? (inputSchema['properties'] as Record<string, JsonSchema>)
        : {},
    );
    required = Object.freeze(
      Array.isArray(inputSchema['required'])
        ? inputSchema['required'].filter((r): r is string => typeof r === 'string')
        : [],
    );
  } else {
    parameters = checkParameters(where, def.parameters ?? {});
    required = checkStringList(where, 'required', def.required);
    for (const entry of required) {
      if (!Object.hasOwn(parameters, entry)) {
        throw new Error(
          `${where}: required parameter ${quote(entry)} is not declared in parameters` +
            ` (declared: ${Object.keys(parameters).join(', ') || 'none'})`,
        );
      }
    }
    inputSchema = deepFreeze({
      type: 'object',
      properties: parameters,
      required: [...required],
      additionalProperties: false,
    });
  }
  const pathParameters = checkStringList(where, 'pathParameters', def.pathParameters);
  for (const entry of pathParameters) {
    const type = parameters[entry]?.['type'];
    if (type !== 'string') {
      throw new Error(
        `${where}: path parameter ${quote(entry)} must be declared in parameters as a string` +
          ` (declared: ${Object.keys(parameters).join(', ') || 'none'})`,
      );
    }
  }
  const repoPathParameters = def.repoPathParameters ?? {};
  for (const [entry, base] of Object.entries(repoPathParameters)) {
    const schema = parameters[entry];
    const items = schema?.['items'] as Record<string, unknown> | undefined;
    if (schema?.['type'] !== 'array' || items?.['type'] !== 'string') {
      throw new Error(
        `${where}: repository path parameter ${quote(entry)} must be declared in parameters as an array of strings`,
      );
    }
    if (!pathParameters.includes(base)) {
      throw new Error(
        `${where}: repository path parameter ${quote(entry)} names ${quote(base)}, which is not a path parameter`,
      );
    }
  }
  const grantParameters = checkStringList(where, 'grantParameters', def.grantParameters);
  for (const entry of grantParameters) {
    if (parameters[entry] === undefined) {
      throw new Error(
        `${where}: grant parameter ${quote(entry)} is not declared in parameters` +
          ` (declared: ${Object.keys(parameters).join(', ') || 'none'})`,
      );
    }
  }
  const outputSchema =
    def.outputSchema === undefined
      ? undefined
      : copySchema(where, 'outputSchema', def.outputSchema);
  const configSchema =
    def.configSchema === undefined
      ? undefined
      : copySchema(where, 'configSchema', def.configSchema);
  const compile = (): ValidateFunction => {
    for (const [field, schema] of [
      ['outputSchema', outputSchema],
      ['configSchema', configSchema],
    ] as const) {
      if (schema !== undefined) checkSchema(compileWith, where, field, schema);
    }
    return compileInput(compileWith, where, inputSchema, parameters);
  };

  const tool: Tool<Args> = {
    name,
    description: def.description,
    parameters,
    required: Object.freeze([...required]),
    safety: def.safety,
    categories: Object.freeze([...categories]),
    readOnly,
    idempotent,
    ...(def.openWorld === undefined ? {} : { openWorld }),
    ...(def.cacheable === undefined ? {} : { cacheable: def.cacheable }),
    inputSchema,
    handler: def.handler,
    ...(outputSchema === undefined ? {} : { outputSchema }),
    ...(configSchema === undefined ? {} : { configSchema }),
    ...(def.rateLimit === undefined ? {} : { rateLimit: Object.freeze({ ...def.rateLimit }) }),
    ...(def.preview === undefined ? {} : { preview: def.preview }),
    ...(def.normalize === undefined ? {} : { normalize: def.normalize }),
    ...(pathParameters.length === 0 ? {} : { pathParameters: Object.freeze([...pathParameters]) }),
    ...(Object.keys(repoPathParameters).length === 0
      ? {}
      : { repoPathParameters: Object.freeze({ ...repoPathParameters }) }),
    ...(def.effects === undefined
      ? {}
      : {
          effects:
            typeof def.effects === 'function' ? def.effects : Object.freeze({ ...def.effects }),
        }),
    ...(grantParameters.length === 0
      ? {}
      : { grantParameters: Object.freeze([...grantParameters]) }),
    ...(def.timeoutMs === undefined ? {} : { timeoutMs: def.timeoutMs }),
    ...(def.maxOutputBytes === undefined ? {} : { maxOutputBytes: def.maxOutputBytes }),
  };
  Object.freeze(tool);
  pending.set(tool, compile);
  return tool;
}

/**
 * Compile a declared tool's schemas now (input, output and config), so a schema Ajv cannot
 * compile is reported when the tool loads rather than at its first call.
 * @param tool a tool from {@link defineTool}.
 * @returns the tool.
 * @throws Error quoting the schema Ajv cannot compile.
 */
export function checkToolSchemas<T extends object>(tool: T): T {
  getValidator(tool as unknown as Tool<unknown>);
  return tool;
}

/**
 * The same tool from another pack: a copy that names its pack (for listings and config).
 * @param tool a declared tool.
 * @param pack the pack's name.
 */
export function withPack<Args>(tool: Tool<Args>, pack: string): Tool<Args> {
  if (tool.pack === pack) return tool;
  const copy = Object.freeze({ ...tool, pack });
  const validate = validators.get(tool);
  if (validate !== undefined) validators.set(copy, validate);
  // The copy compiles through the original, so both keep one validator.
  else if (pending.has(tool)) pending.set(copy, () => getValidator(tool as Tool<unknown>));
  return copy;
}

/** True when `value` is a tool returned by {@link defineTool}. */
export function isDefinedTool(value: unknown): value is Tool {
  return (
    typeof value === 'object' && value !== null && (validators.has(value) || pending.has(value))
  );
}

/**
 * The compiled argument validator of a tool; compiled once and cached per tool object.
 * @param tool a declared tool (a tool object built by hand is compiled on first use).
 */
export function getValidator(tool: Tool<unknown>): ValidateFunction {
  let validate = validators.get(tool);
  if (validate === undefined) {
    validate = (pending.get(tool) ?? (() => compileSchema(tool.inputSchema)))();
    validators.set(tool, validate);
    pending.delete(tool);
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

function checkEffects(where: string, effects: unknown): void {
  if (effects === undefined || typeof effects === 'function') return;
  const ok =
    isRecord(effects) &&
    SAFETY_LEVELS.includes(effects['safety'] as never) &&
    typeof effects['readOnly'] === 'boolean' &&
    typeof effects['idempotent'] === 'boolean';
  if (!ok) {
    throw new Error(
      `${where}: effects must be a function or {safety, readOnly, idempotent}, got ${quote(effects)}`,
    );
  }
}

function checkInput(where: string, input: unknown): JsonSchema {
  if (!isRecord(input)) {
    throw new Error(`${where}: input must be a JSON Schema object, got ${quote(input)}`);
  }
  const copy = cloneSchema(where, 'input', input);
  const type = copy['type'];
  if (type !== undefined && type !== 'object') {
    throw new Error(
      `${where}: input must describe an object (type "object"), got type ${quote(type)}`,
    );
  }
  return upgradeDraft7({ type: 'object', ...copy }) as JsonSchema;
}

function checkParameters(where: string, parameters: unknown): Record<string, JsonSchema> {
  if (!isRecord(parameters)) {
    throw new Error(
      `${where}: parameters must be an object of JSON Schemas keyed by parameter name, got ${quote(parameters)}`,
    );
  }
  const copy = cloneSchema(where, 'parameters', parameters);
  for (const [param, schema] of Object.entries(copy)) {
    if (!isRecord(schema)) {
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

function copySchema(where: string, field: string, schema: unknown): JsonSchema {
  if (!isRecord(schema)) {
    throw new Error(`${where}: ${field} must be a JSON Schema object, got ${quote(schema)}`);
  }
  return deepFreeze(cloneSchema(where, field, schema));
}

function checkSchema(
  compileWith: SchemaCompiler,
  where: string,
  field: string,
  schema: JsonSchema,
): void {
  try {
    compileWith(schema);
  } catch (error) {
    throw new Error(
      `${where}: ${field} ${quote(schema)} is not a valid JSON Schema: ${messageOf(error)}`,
      { cause: error },
    );
  }
}

function compileInput(
  compileWith: SchemaCompiler,
  where: string,
  inputSchema: JsonSchema,
  parameters: Record<string, JsonSchema>,
): ValidateFunction {
  try {
    return compileWith(inputSchema);
  } catch (error) {
    // Find the parameter to blame, so the message quotes the schema the author has to fix.
    for (const [param, schema] of Object.entries(parameters)) {
      try {
        compileWith(schema);
      } catch (inner) {
        throw new Error(
          `${where}: parameter '${param}' has a schema Ajv cannot compile ${quote(schema)}: ${messageOf(inner)}`,
          { cause: error },
        );
      }
    }
    throw new Error(`${where}: the input schema cannot be compiled: ${messageOf(error)}`, {
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
    isRecord(limit) &&
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
