import type { ToolResult } from '../../src/protocol/types.ts';

/** A result as the executor writes it, with overrides. */
export function makeResult(overrides: Partial<ToolResult> = {}): ToolResult {
  return {
    id: 'call_000000000001',
    name: 'search_web',
    success: true,
    status: 'success',
    content: 'three results',
    data: {
      results: [{ title: 'Agents', url: 'https://example.com/agents', snippet: 'A survey.' }],
    },
    error: null,
    metadata: {
      execution_time_ms: 412,
      safety_level: 'safe',
      approved_by: 'auto',
      attempts: 1,
      cached: false,
      finished_at: '2026-11-21T10:00:00.000Z',
    },
    ...overrides,
  };
}

/** A failed result of the given status. */
export function makeFailure(
  status: 'error' | 'rejected' | 'interrupted',
  overrides: Partial<ToolResult> = {},
): ToolResult {
  const code =
    status === 'error' ? 'EXECUTION_FAILED' : status === 'rejected' ? 'REJECTED' : 'INTERRUPTED';
  return makeResult({
    success: false,
    status,
    content: 'it failed',
    data: undefined,
    error: { code, message: `the call ended: ${status}`, recoverable: false },
    ...overrides,
  });
}
