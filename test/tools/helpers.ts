import assert from 'node:assert/strict';
import { createServer, type AddressInfo } from 'node:net';
import { ToolError } from '../../src/protocol/errors.ts';

/**
 * Assert that a promise rejects with a ToolError of the given code, and return the error.
 * @param promise the handler call.
 * @param code the expected error code.
 */
export async function rejectsWith(promise: Promise<unknown>, code: string): Promise<ToolError> {
  const error = await promise.then(
    () => assert.fail('expected the call to fail'),
    (e: unknown) => e,
  );
  assert.ok(error instanceof ToolError, `expected a ToolError, got ${String(error)}`);
  assert.equal(error.code, code, error.message);
  return error;
}

/** A TCP port on 127.0.0.1 that nothing listens on (bound, then released). */
export async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

/**
 * Wait until `predicate` holds, polling every 10 ms.
 * @param predicate the condition.
 * @param timeoutMs deadline; defaults to 5 s.
 */
export async function waitFor(predicate: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error('waitFor: condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
