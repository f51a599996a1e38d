import type { JsonSchema } from '../protocol/types.ts';
import { DURATION_PATTERN } from './duration.ts';

const folderName: JsonSchema = { type: 'string', minLength: 1 };
const nonNegativeInteger: JsonSchema = { type: 'integer', minimum: 0 };
const positiveInteger: JsonSchema = { type: 'integer', minimum: 1 };
const cronExpression: JsonSchema = { type: 'string', minLength: 1 };
const policyRules: JsonSchema = { type: 'array', items: { type: 'string', minLength: 1 } };

function section(properties: Record<string, JsonSchema>): JsonSchema {
  return { type: 'object', properties, additionalProperties: false };
}

/**
 * JSON Schema of the config file as written (before defaults): every key optional, no unknown
 * keys anywhere except inside `tools.<name>`, which each tool checks with its own schema.
 */
export const CONFIG_SCHEMA: JsonSchema = section({
  vault: { type: 'string', minLength: 1 },
  concurrency: { type: 'integer', minimum: 1, maximum: 10_000 },
  timeout_ms: positiveInteger,
  settle_ms: nonNegativeInteger,
  max_note_bytes: positiveInteger,
  max_calls_per_note: positiveInteger,
  reconcile_cron: cronExpression,
  cache_ttl_ms: nonNegativeInteger,
  retry: section({
    attempts: { type: 'integer', minimum: 1, maximum: 100 },
    base_delay_ms: nonNegativeInteger,
  }),
  folders: section({
    inbox: folderName,
    in_progress: folderName,
    pending: folderName,
    approved: folderName,
    rejected: folderName,
    done: folderName,
    failed: folderName,
    logs: folderName,
    outbox: folderName,
  }),
  log: section({
    level: { enum: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] },
  }),
  http: section({
    host: { type: 'string', minLength: 1 },
    port: { type: ['integer', 'null'], minimum: 0, maximum: 65_535 },
    allowed_hosts: { type: 'array', items: { type: 'string', minLength: 1 } },
    allowed_origins: { type: 'array', items: { type: 'string', pattern: '^https?://' } },
    max_connections: { type: 'integer', minimum: 1, maximum: 100_000 },
    api_token_env: { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]*$' },
  }),
  shutdown: section({ grace_ms: nonNegativeInteger }),
  approval: section({
    expire_after: { type: 'string', pattern: DURATION_PATTERN },
    check_cron: cronExpression,
    vault_decisions: { type: 'boolean' },
    max_pending: { type: 'integer', minimum: 1, maximum: 10_000_000 },
  }),
  ledger: section({
    replay_window: { type: 'string', pattern: DURATION_PATTERN },
    retention: { type: 'string', pattern: DURATION_PATTERN },
  }),
  policy: section({ allow: policyRules, ask: policyRules, deny: policyRules }),
  dashboard_interval_ms: nonNegativeInteger,
  parse_timeout_ms: positiveInteger,
  plugins: { type: 'array', items: { type: 'string', minLength: 1 } },
  tools: {
    type: 'object',
    propertyNames: { pattern: '^[a-z][a-z0-9_]*$' },
    additionalProperties: { type: 'object' },
  },
});
