/**
 * An infrastructure failure of the vault's file system (EACCES, ENOSPC, EIO…): a typed error
 * carrying the errno code, the operation and the path, with the original error as `cause`.
 */
export class VaultIoError extends Error {
  /** The errno code (`EACCES`, `ENOSPC`…), or `EUNKNOWN` when the cause had none. */
  readonly code: string;
  /** What vaultd was doing: `rename`, `write`, `open`… */
  readonly operation: string;
  readonly path: string;

  /**
   * @param operation what was being done, e.g. `link`.
   * @param path the file or folder it was done to.
   * @param cause the original error.
   */
  constructor(operation: string, path: string, cause: unknown) {
    const code = errnoCode(cause) ?? 'EUNKNOWN';
    const reason = cause instanceof Error ? cause.message : String(cause);
    super(`${operation} ${path} failed: ${reason}`, { cause });
    this.name = 'VaultIoError';
    this.code = code;
    this.operation = operation;
    this.path = path;
  }
}

/**
 * The errno code of a Node.js file-system error, or undefined for anything else.
 * @param error any thrown value.
 */
export function errnoCode(error: unknown): string | undefined {
  if (error === null || typeof error !== 'object') return undefined;
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' ? code : undefined;
}

/**
 * True when the error only says that a file vanished (it was moved or deleted by someone else
 * between being seen and being touched): noise in a watched vault, not a failure.
 * @param error any thrown value.
 */
export function isVanished(error: unknown): boolean {
  return errnoCode(error) === 'ENOENT';
}

/**
 * Run a file-system operation; a vanished file gives null, any other failure a {@link VaultIoError}.
 * @param operation name for the error, e.g. `read`.
 * @param path the path the operation touches.
 * @param action the operation.
 */
export async function ignoreVanished<T>(
  operation: string,
  path: string,
  action: () => Promise<T>,
): Promise<T | null> {
  try {
    return await action();
  } catch (error) {
    if (isVanished(error)) return null;
    throw toVaultIoError(operation, path, error);
  }
}

/**
 * Wrap a failure as a {@link VaultIoError}, leaving one that already is untouched.
 * @param operation what was being done.
 * @param path the path it was done to.
 * @param error the thrown value.
 */
export function toVaultIoError(operation: string, path: string, error: unknown): VaultIoError {
  return error instanceof VaultIoError ? error : new VaultIoError(operation, path, error);
}
