import type { ToolProgress, ToolResult } from '../protocol/types.ts';

/** Events the daemon emits for the SSE stream, metrics and the dashboard, with their payloads. */
export interface DaemonEventMap {
  'daemon.state': {
    state: 'starting' | 'ready' | 'degraded' | 'draining' | 'stopped';
    reason?: string;
  };
  'note.claimed': { note: string; from: string };
  'tool.call': { note: string; callId: string; tool: string; arguments: Record<string, unknown> };
  'tool.progress': { note: string; callId: string; tool: string; progress: ToolProgress };
  'tool.result': { note: string; callId: string; tool: string; result: ToolResult };
  'note.moved': { note: string; from: string; to: string; state: string };
  'approval.requested': { note: string; callIds: string[]; tools: string[] };
}

/** Name of a daemon event. */
export type DaemonEventName = keyof DaemonEventMap;
