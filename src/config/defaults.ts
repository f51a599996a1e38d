import type { Config } from './types.ts';

/** Every default of the config (SPEC sections 1 and 6); `vault` has none and must be given. */
export const CONFIG_DEFAULTS: Omit<Config, 'vault'> = Object.freeze({
  concurrency: 10,
  timeout_ms: 30_000,
  settle_ms: 1_500,
  max_note_bytes: 5 * 1024 * 1024,
  reconcile_cron: '*/30 * * * * *',
  cache_ttl_ms: 60_000,
  retry: Object.freeze({ attempts: 3, base_delay_ms: 200 }),
  folders: Object.freeze({
    inbox: 'Needs_Action',
    in_progress: 'In_Progress',
    pending: 'Pending_Approval',
    approved: 'Approved',
    rejected: 'Rejected',
    done: 'Done',
    failed: 'Failed',
    logs: 'Logs',
    outbox: 'Outbox',
  }),
  log: Object.freeze({ level: 'info' as const }),
  http: Object.freeze({
    host: '127.0.0.1',
    port: null,
    allowed_hosts: Object.freeze([]) as readonly string[],
    allowed_origins: Object.freeze([]) as readonly string[],
    max_connections: 64,
    api_token_env: 'VAULTD_API_TOKEN',
  }),
  shutdown: Object.freeze({ grace_ms: 10_000 }),
  approval: Object.freeze({
    expire_after: '7d',
    expire_after_ms: 7 * 86_400_000,
    check_cron: '0 * * * * *',
    vault_decisions: true,
  }),
  ledger: Object.freeze({
    replay_window: '10m',
    replay_window_ms: 10 * 60_000,
    retention: '30d',
    retention_ms: 30 * 86_400_000,
  }),
  policy: Object.freeze({
    allow: Object.freeze([]) as readonly string[],
    ask: Object.freeze([]) as readonly string[],
    deny: Object.freeze([]) as readonly string[],
  }),
  dashboard_interval_ms: 5_000,
  parse_timeout_ms: 20_000,
  plugins: Object.freeze([]) as readonly string[],
  tools: Object.freeze({}),
});
