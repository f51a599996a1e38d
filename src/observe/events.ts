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
  /** A tool wrote a file (seed protocol `file.changed`); `path` is vault-relative when inside it. */
  'file.changed': { path: string; tool: string; callId: string; note: string | null };
  /** A pack's tools changed while running (an MCP server's list, a restart). */
  'tools.changed': { added: string[]; removed: string[] };
}

/** Name of a daemon event. */
export type DaemonEventName = keyof DaemonEventMap;
