/**
 * A server's tool name as it ends a vaultd name: lower-cased, every run of characters outside
 * `a-z0-9_` turned into one `_`, no `_` at either end (`Delete-File` is `delete_file`).
 * @param tool the tool's name on the server.
 */
export function normaliseToolName(tool: string): string {
  return tool
    .toLowerCase()
    .replace(/[^a-z0-9_]+/g, '_')
    .replace(/_+/g, '_')
    .replace(/^_|_$/g, '');
}

/**
 * The name a server's tool has in vaultd: `<prefix>_<tool>`, the tool's name normalised by
 * {@link normaliseToolName}, so it fits vaultd's name rule (`get-sum` of server `everything` is
 * `everything_get_sum`).
 * @param prefix the server's prefix (already a valid name).
 * @param tool the tool's name on the server.
 */
export function mapToolName(prefix: string, tool: string): string {
  const tail = normaliseToolName(tool);
  return tail === '' ? prefix : `${prefix}_${tail}`;
}
