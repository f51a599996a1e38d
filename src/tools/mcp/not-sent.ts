/**
 * A call that never reached the server: it was not running, or it no longer knew vaultd's session
 * (it restarted) and refused the request. The call did not act and may be made again.
 */
export class McpNotSentError extends Error {
  /**
   * @param message what happened, for the call's result.
   * @param options the error it came from.
   */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'McpNotSentError';
  }
}
