/**
 * A mistake on the command line or in what it names (a folder that is not a vault, a plugin that
 * does not load): printed as one line, exit code 2.
 */
export class UsageError extends Error {
  readonly code = 'USAGE';

  /**
   * @param message one line that names what is wrong and what to do.
   * @param options the underlying error, when there is one.
   */
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'UsageError';
  }
}
