import type {
  JsonSchemaType,
  JsonSchemaValidator,
  jsonSchemaValidator,
} from '@modelcontextprotocol/sdk/validation/types.js';
import { makeUntrustedCompiler, type SchemaCompiler } from '../../protocol/untrusted-schema.ts';
import { MAX_SCHEMA_CHARS } from './adapt-list.ts';

/** What the SDK client checks a tool's `structuredContent` with, renewed for each tool list. */
export interface OutputValidator extends jsonSchemaValidator {
  /** A fresh compiler for the next tool list: what the last one compiled is freed with it. */
  renew(): void;
}

/**
 * The checker the SDK client runs on a result's `structuredContent` against the tool's
 * `outputSchema` (both from the server). The SDK's own compiles with JavaScript's regular
 * expressions (a hostile `pattern` holds the main thread for ever), keeps every schema it ever
 * compiled, and throws on a schema it cannot compile, which fails the whole tool list. This one
 * compiles with {@link makeUntrustedCompiler} (RE2, a fresh instance per list), at a tool's first
 * result rather than when the list comes, within the size vaultd compiles, and never throws: a tool
 * whose output schema cannot be used has every result reported invalid (vaultd leaves such a tool
 * out anyway).
 * @param makeCompiler makes the compiler of each list; default {@link makeUntrustedCompiler}'s,
 *   without filling in defaults.
 */
export function makeOutputValidator(
  makeCompiler: () => SchemaCompiler = () => makeUntrustedCompiler({ useDefaults: false }),
): OutputValidator {
  let compile = makeCompiler();
  return {
    renew() {
      compile = makeCompiler();
    },
    getValidator<T>(schema: JsonSchemaType): JsonSchemaValidator<T> {
      // Compiled at the first result to check, not here: the SDK asks for every tool of a page
      // of the list in one go, on the main thread, and vaultd may never call most of them.
      const compileWith = compile;
      let validate: ReturnType<SchemaCompiler> | undefined;
      let unusable: string | undefined;
      return (input) => {
        if (validate === undefined && unusable === undefined) {
          try {
            if (JSON.stringify(schema).length > MAX_SCHEMA_CHARS) {
              throw new Error(
                `it is larger than the ${MAX_SCHEMA_CHARS} characters vaultd compiles`,
              );
            }
            validate = compileWith(schema as object);
          } catch (error) {
            unusable = `its output schema cannot be used: ${(error as Error).message}`;
          }
        }
        if (validate === undefined) {
          return { valid: false, data: undefined, errorMessage: unusable ?? 'no output schema' };
        }
        return validate(input)
          ? { valid: true, data: input as T, errorMessage: undefined }
          : {
              valid: false,
              data: undefined,
              errorMessage: (validate.errors ?? [])
                .slice(0, 5)
                .map((e) => `${e.instancePath || '/'} ${e.message ?? 'is invalid'}`)
                .join('; '),
            };
      };
    },
  };
}
