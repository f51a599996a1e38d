import { EXIT } from './exit-codes.ts';

let installed = false;

/**
 * End the command quietly, with exit code 0, when the reader of its standard output goes away
 * (`vaultd tools | head -1`): the output was cut short on purpose, not a failure. Any other error
 * on stdout stays fatal. Not for the daemon (`run`, `once`), which must finish what it started.
 */
export function exitQuietlyOnClosedStdout(): void {
  if (installed) return;
  installed = true;
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(EXIT.ok);
    throw error;
  });
}
