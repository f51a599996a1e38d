import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { MAX_NESTING, nestsDeeperThan } from '../protocol/depth.ts';

/** A pending approval as the HTTP API shows it. */
export interface ApprovalView {
  readonly id: string;
  readonly note: string;
  readonly call_id: string;
  readonly tool: string;
  readonly arguments: Readonly<Record<string, unknown>>;
  readonly preview: string | null;
  readonly reason: string;
  readonly requested_at: string;
  readonly expires_at: string;
  readonly state: string;
}

/** A decision sent to the API. */
export interface ApiDecision {
  readonly decision: 'approve' | 'reject';
  /** Parameters edited by the human; validated again before the call runs. */
  readonly arguments?: Record<string, unknown>;
  readonly reason?: string;
  /** Approve and grant the tool (or `scope`) from now on. */
  readonly always?: boolean;
  readonly scope?: string;
}

/** What the daemon gives the API: the pending requests and a way to decide one. */
export interface ApprovalsBackend {
  list(): readonly ApprovalView[];
  decide(
    id: string,
    decision: ApiDecision,
  ): Promise<
    { ok: true; view: ApprovalView } | { ok: false; status: 400 | 404 | 409; message: string }
  >;
}

/** Requests listed per page unless `limit` says otherwise, and the most `limit` may ask for. */
const DEFAULT_PAGE = 100;
const MAX_PAGE = 1000;
/** JSON bytes of the requests on one page (at least one is always listed). */
const PAGE_BYTES = 4 * 1024 * 1024;

/**
 * One page of the pending requests, oldest first (by time asked, then id), from after the cursor
 * `after` (the `next` of the page before), at most `limit` requests and about 4 MiB. Agents can
 * fill the list with calls of 50 KB each: the whole list as one answer was 203 MB, built on the
 * main thread for 11 s, at 4,000 requests, and past V8's longest string at 20,000 (review
 * finding).
 * @returns the page and the cursor of the next one (null at the end), or what is wrong.
 */
function pageOf(
  all: readonly ApprovalView[],
  query: URLSearchParams,
): { approvals: ApprovalView[]; next: string | null } | string {
  const limitText = query.get('limit');
  const limit = limitText === null ? DEFAULT_PAGE : Number(limitText);
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE)
    return `limit must be a whole number from 1 to ${MAX_PAGE}`;
  const after = query.get('after');
  // The cursor: time asked, then id (ISO times of one length sort as text).
  const keyed = all
    .map((view) => ({ key: `${view.requested_at}~${view.id}`, view }))
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  const approvals: ApprovalView[] = [];
  let bytes = 0;
  let last = '';
  for (const { key, view } of keyed) {
    if (after !== null && key <= after) continue;
    const size = Buffer.byteLength(JSON.stringify(view));
    if (approvals.length === limit || (approvals.length > 0 && bytes + size > PAGE_BYTES)) {
      return { approvals, next: last };
    }
    approvals.push(view);
    bytes += size;
    last = key;
  }
  return { approvals, next: null };
}

/** Longest request body accepted. */
const MAX_BODY = 64 * 1024;
/** The path of a decision: `/approvals/{id}/approve` or `/reject`. */
export const DECISION_PATH = /^\/approvals\/(apr_[a-z2-7]{26})\/(approve|reject)$/;

/**
 * Serve `GET /approvals` and `POST /approvals/{id}/approve|reject` (body optional, JSON:
 * `{"arguments": {...}, "reason": "...", "always": true, "scope": "tool(param:glob)"}`) for a
 * bearer token, compared in constant time; without a token configured the API does not exist
 * (404). A decision counts once, for a pending request (409 otherwise).
 * @param req the request (path already known to start with `/approvals`).
 * @param res the response.
 * @param options the token, the backend and the JSON writer.
 * @returns true when it answered.
 */
export async function serveApprovals(
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  options: {
    readonly token: string | undefined;
    readonly backend: ApprovalsBackend | undefined;
    readonly sendJson: SendJson;
  },
): Promise<void> {
  const { token, backend, sendJson } = options;
  if (token === undefined || token === '' || backend === undefined) {
    sendJson(res, 404, { error: 'not found: the approvals API is off (no token configured)' });
    return;
  }
  if (!hasBearerToken(req.headers.authorization, token)) {
    sendJson(res, 401, { error: 'a bearer token is needed' }, { 'www-authenticate': 'Bearer' });
    return;
  }
  if (path === '/approvals') {
    // HEAD wherever GET: the same answer without its body (Node leaves it out).
    if (!allowsMethod(req, res, sendJson, ['GET', 'HEAD'])) return;
    const page = pageOf(backend.list(), new URL(req.url ?? '/', 'http://localhost').searchParams);
    if (typeof page === 'string') sendJson(res, 400, { error: page });
    else sendJson(res, 200, page);
    return;
  }
  const match = DECISION_PATH.exec(path);
  if (match === null) {
    sendJson(res, 404, { error: 'not found' });
    return;
  }
  if (!allowsMethod(req, res, sendJson, ['POST'])) return;
  const body = await readBody(req, res, sendJson);
  if (body === null) return;
  const decision: ApiDecision = { decision: match[2] as 'approve' | 'reject', ...body };
  if (
    decision.decision === 'reject' &&
    (decision.always === true || decision.scope !== undefined)
  ) {
    sendJson(res, 400, { error: 'always and scope go with approve' });
    return;
  }
  const outcome = await backend.decide(match[1] as string, decision);
  if (!outcome.ok) sendJson(res, outcome.status, { error: outcome.message });
  else sendJson(res, 200, { approval: outcome.view });
}

/** How the listener writes a JSON answer. */
export type SendJson = (
  res: ServerResponse,
  status: number,
  body: unknown,
  headers?: Record<string, string>,
) => void;

/**
 * Whether the request's method is one of `methods`; otherwise it is answered 405, with the methods
 * (and OPTIONS) in its Allow header.
 * @param req the request.
 * @param res the response.
 * @param sendJson the listener's JSON writer.
 * @param methods the methods the path answers, OPTIONS aside.
 */
export function allowsMethod(
  req: IncomingMessage,
  res: ServerResponse,
  sendJson: SendJson,
  methods: readonly string[],
): boolean {
  if (methods.includes(req.method ?? '')) return true;
  sendJson(
    res,
    405,
    { error: `method ${req.method ?? ''} not allowed` },
    { allow: [...methods, 'OPTIONS'].join(', ') },
  );
  return false;
}

/**
 * Whether an `Authorization` header carries `token` as a bearer token, compared in constant time.
 * @param header the request's `Authorization` header.
 * @param token the configured token.
 */
export function hasBearerToken(header: string | undefined, token: string): boolean {
  const given = /^Bearer\s+(\S+)$/i.exec(header ?? '')?.[1] ?? '';
  // Hash both sides so the comparison is constant-time whatever their lengths.
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(token).digest();
  return given !== '' && timingSafeEqual(a, b);
}

async function readBody(
  req: IncomingMessage,
  res: ServerResponse,
  sendJson: SendJson,
): Promise<Omit<ApiDecision, 'decision'> | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    // Past the cap nothing is kept; a little more is drained so the client reads the answer,
    // and a flood is cut off.
    if (size > 16 * MAX_BODY) {
      req.destroy();
      return null;
    }
    if (size <= MAX_BODY) chunks.push(chunk as Buffer);
  }
  if (size > MAX_BODY) {
    sendJson(res, 413, { error: `the body is over ${MAX_BODY} bytes` });
    return null;
  }
  if (size === 0) return {};
  if (!/^application\/json\b/i.test(req.headers['content-type'] ?? '')) {
    sendJson(res, 415, { error: 'send the body as application/json' });
    return null;
  }
  let value: unknown;
  try {
    value = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    sendJson(res, 400, { error: 'the body is not valid JSON' });
    return null;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    sendJson(res, 400, { error: 'the body must be a JSON object' });
    return null;
  }
  const v = value as Record<string, unknown>;
  const unknown = Object.keys(v).filter(
    (k) => !['arguments', 'reason', 'always', 'scope'].includes(k),
  );
  if (unknown.length > 0) {
    sendJson(res, 400, { error: `unknown keys: ${unknown.join(', ')}` });
    return null;
  }
  if (
    v['arguments'] !== undefined &&
    (typeof v['arguments'] !== 'object' || v['arguments'] === null || Array.isArray(v['arguments']))
  ) {
    sendJson(res, 400, { error: '"arguments" must be an object' });
    return null;
  }
  // The limit of a call's parameters in a note: nested thousands deep (64 KiB of brackets), the
  // edit overflowed the stack where the decision was journalled, a 500 (review finding F6).
  if (v['arguments'] !== undefined && nestsDeeperThan(v['arguments'], MAX_NESTING)) {
    sendJson(res, 400, {
      error: `"arguments" nest more than ${MAX_NESTING} levels deep; the request is still pending`,
    });
    return null;
  }
  for (const key of ['reason', 'scope'] as const) {
    if (v[key] !== undefined && typeof v[key] !== 'string') {
      sendJson(res, 400, { error: `"${key}" must be a string` });
      return null;
    }
  }
  if (v['always'] !== undefined && typeof v['always'] !== 'boolean') {
    sendJson(res, 400, { error: '"always" must be true or false' });
    return null;
  }
  return {
    ...(v['arguments'] === undefined
      ? {}
      : { arguments: v['arguments'] as Record<string, unknown> }),
    ...(typeof v['reason'] === 'string' ? { reason: v['reason'] } : {}),
    ...(typeof v['always'] === 'boolean' ? { always: v['always'] } : {}),
    ...(typeof v['scope'] === 'string' ? { scope: v['scope'] } : {}),
  };
}
