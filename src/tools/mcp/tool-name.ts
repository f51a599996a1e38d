/**
 * The name a server's tool has in vaultd: `<prefix>_<tool>`, lower-cased, every run of characters
 * outside `a-z0-9_` turned into one `_`, so it fits vaultd's name rule (`get-sum` of server
 * `everything` is `everything_get_sum`).
 * @param prefix the server's prefix (already a valid name).
 * @param tool the tool's name on the server.
 */
export function mapToolName(prefix: string, tool: string): string {
  const tail = tool
    .toLowerCase()
    .replace(/[^a-z0-9_]+/g, '_')
    .replace(/_+/g, '_')
    .replace(/^_|_$/g, '');
  return tail === '' ? prefix : `${prefix}_${tail}`;
}
