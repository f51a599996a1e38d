import type {
  JsonSchemaType,
  JsonSchemaValidator,
  jsonSchemaValidator,
} from '@modelcontextprotocol/sdk/validation/types.js';
import { makeUntrustedCompiler, type SchemaCompiler } from '../../protocol/untrusted-schema.ts';

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
 * compiles with {@link makeUntrustedCompiler} (RE2, a fresh instance per list) and never throws:
 * a tool whose output schema cannot be used has every result reported invalid (vaultd leaves such
 * a tool out anyway).
 */
export function makeOutputValidator(): OutputValidator {
  let compile: SchemaCompiler = makeUntrustedCompiler({ useDefaults: false });
  return {
    renew() {
      compile = makeUntrustedCompiler({ useDefaults: false });
    },
    getValidator<T>(schema: JsonSchemaType): JsonSchemaValidator<T> {
      let validate: ReturnType<SchemaCompiler>;
      try {
        validate = compile(schema as object);
      } catch (error) {
        const errorMessage = `its output schema cannot be used: ${(error as Error).message}`;
        return () => ({ valid: false, data: undefined, errorMessage });
      }
      return (input) =>
        validate(input)
          ? { valid: true, data: input as T, errorMessage: undefined }
          : {
              valid: false,
              data: undefined,
              errorMessage: (validate.errors ?? [])
                .slice(0, 5)
                .map((e) => `${e.instancePath || '/'} ${e.message ?? 'is invalid'}`)
                .join('; '),
            };
    },
  };
}
