import { ToolError } from '../../../protocol/errors.ts';

/**
 * Read a provider's API key from the environment; keys never come from the vault or the note.
 * @param provider provider name for the message.
 * @param envName the environment variable to read.
 * @throws ToolError EXECUTION_FAILED (not recoverable) naming the variable when it is unset or empty.
 */
export function readApiKey(provider: string, envName: string): string {
  const key = process.env[envName]?.trim();
  if (key === undefined || key === '') {
    throw new ToolError(
      'EXECUTION_FAILED',
      `${provider} needs an API key: set the environment variable ${envName} for the vaultd process ` +
        '(tools.search_web.api_key_env names the variable to read)',
      { recoverable: false },
    );
  }
  return key;
}
