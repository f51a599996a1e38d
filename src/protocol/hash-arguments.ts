import { hash } from 'node:crypto';
import { canonicalJson } from './canonical-json.ts';

/**
 * The hash of a call's arguments that policy, approval requests, authorizations and the ledger
 * compare: SHA-256 of their canonical JSON, 32 hex digits.
 * @param args the call's normalised arguments.
 */
export function hashArguments(args: Readonly<Record<string, unknown>>): string {
  return hash('sha256', canonicalJson(args), 'hex').slice(0, 32);
}

const schemaHashes = new WeakMap<object, string>();

/**
 * A tool's input schema as a hash, kept per tool object: recorded with an approval request, so a
 * tool whose parameters changed after vaultd asked (an MCP server's new schema, a config reload)
 * makes the question stale instead of running with defaults the human never saw.
 * @param tool a declared tool.
 */
export function hashSchema(tool: { readonly inputSchema: unknown }): string {
  let known = schemaHashes.get(tool);
  if (known === undefined) {
    known = hash('sha256', canonicalJson(tool.inputSchema), 'hex').slice(0, 32);
    schemaHashes.set(tool, known);
  }
  return known;
}
