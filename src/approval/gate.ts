import type { ApprovedBy, Effects, Preview, SafetyLevel } from '../protocol/types.ts';
import { matchesAllowedTools } from './allowed-tools.ts';
import type { GrantStore, ToolIdentity } from './grants.ts';
import { compilePolicy, evaluatePolicy, type CompiledPolicy } from './policy.ts';
import type {
  ApprovalRequest,
  ApprovalRequests,
  DecisionChannel,
  RequestDecision,
} from './requests.ts';

/** Through what a call was let run. */
export type AuthorizationChannel = DecisionChannel | 'policy' | 'grant' | 'auto';

/** The channels a human decides through. */
const HUMAN_CHANNELS: ReadonlySet<AuthorizationChannel> = new Set(['tick', 'move', 'cli', 'http']);

/**
 * The gate's permission for exactly one call with exactly these arguments: the only way to reach
 * a tool's handler. Issued by {@link ApprovalGate} and redeemed once by the executor.
 */
export interface Authorization {
  readonly callId: string;
  readonly tool: string;
  /** Hash of the normalised arguments that may run. */
  readonly argsHash: string;
  readonly approvedBy: ApprovedBy;
  readonly channel: AuthorizationChannel;
  /** Who decided: `human` in the vault, a user name, `api`; null without a human. */
  readonly by: string | null;
  /** The approval request a human decided, when one did. */
  readonly request: string | null;
  /** The policy rule or grant that let it run, when one did. */
  readonly rule: string | null;
  /** The call's effects as decided with the permission: the executor does not decide them again. */
  readonly effects?: Effects;
  /**
   * The tool's pack and schema when the permission was issued: redeemed only for that tool (an MCP
   * server's new list between the decision and the run is another tool).
   */
  readonly identity?: ToolIdentity;
}

/** What the gate says about a call. */
export type GateVerdict =
  | { readonly action: 'run'; readonly auth: Authorization }
  | { readonly action: 'ask'; readonly reason: string; readonly rule?: string }
  | { readonly action: 'deny'; readonly message: string; readonly rule?: string };

/** A verdict to run, before its permission is issued. */
interface RunVerdict {
  readonly action: 'run';
  readonly approvedBy: ApprovedBy;
  readonly channel: AuthorizationChannel;
  readonly request: string | null;
  readonly rule: string | null;
}

/** A call as the gate sees it: validated and normalised. */
export interface GateCall {
  readonly id: string;
  readonly name: string;
  readonly arguments: Readonly<Record<string, unknown>>;
  /** Hash of the normalised arguments. */
  readonly argsHash: string;
  /**
   * Path parameters as the agent spelled them, where that differs from the canonical path in
   * `arguments` (the executor's check), and the vault paths of repository-relative path lists:
   * deny and ask rules match them too.
   */
  readonly spelledPaths?: Readonly<Record<string, string | readonly string[]>> | undefined;
  /** The tool's safety level for these arguments. */
  readonly safety: SafetyLevel;
  /** The call's effects, decided once (they go with the permission). */
  readonly effects?: Effects;
  /** The note's front-matter `allowed_tools`, when it has one. */
  readonly allowedTools?: readonly string[] | undefined;
  /**
   * The tool's pack and schema (`toolIdentity`): a grant covers the call only when they are the
   * ones it was given for; an always-allow decision records them with the grant.
   */
  readonly identity?: ToolIdentity | undefined;
}

/** What the executor needs of a gate. */
export interface Gate {
  evaluate(call: GateCall): GateVerdict;
  /** True once for an authorization this gate issued for exactly this call; false otherwise. */
  redeem(auth: Authorization, call: RedeemCall): boolean;
}

/** The call about to run, as {@link Gate.redeem} compares it with the permission. */
export interface RedeemCall {
  readonly id: string;
  readonly name: string;
  readonly argsHash: string;
  /** The tool's identity now; a permission issued for another identity is refused. */
  readonly identity?: ToolIdentity | undefined;
}

/** Options of {@link ApprovalGate}. */
export interface ApprovalGateOptions {
  readonly policy?: CompiledPolicy;
  readonly grants?: GrantStore;
  readonly requests?: ApprovalRequests;
  /** How long a request waits before it expires; default 7 days. */
  readonly expireAfterMs?: number;
}

/**
 * One gate for every call (SPEC section 5): the note's `allowed_tools`, policy `deny` (never
 * overridden), `ask`, `allow`, always-allow grants, and the tool's safety level decide whether a
 * call runs, waits for a human or is denied; a human's decision counts only through a pending
 * request, once. Every permission is an {@link Authorization} for one call and one set of
 * arguments that the executor redeems once; nothing else reaches a handler.
 */
export class ApprovalGate implements Gate {
  #policy: CompiledPolicy;
  readonly #grants: GrantStore | undefined;
  readonly #requests: ApprovalRequests | undefined;
  #expireAfterMs: number;
  readonly #redeemed = new WeakSet<Authorization>();
  /** The permissions this gate issued: the call each was for, and the policy generation then. */
  readonly #issued = new WeakMap<Authorization, { call: GateCall; generation: number }>();
  /** Counts policy reloads: a permission issued before one is checked against deny rules again. */
  #generation = 0;

  /** @param options policy, grants, requests and expiry; without them only policy-free defaults apply. */
  constructor(options: ApprovalGateOptions = {}) {
    this.#policy = options.policy ?? compilePolicy({});
    this.#grants = options.grants;
    this.#requests = options.requests;
    this.#expireAfterMs = options.expireAfterMs ?? 7 * 86_400_000;
  }

  /** The approval requests, when the gate has a store. */
  get requests(): ApprovalRequests | undefined {
    return this.#requests;
  }

  /** The grants, when the gate has a store. */
  get grants(): GrantStore | undefined {
    return this.#grants;
  }

  /**
   * Take a new policy (SIGHUP reload).
   * @param policy compiled policy.
   */
  setPolicy(policy: CompiledPolicy): void {
    this.#policy = policy;
    this.#generation++;
  }

  /**
   * Take a new `approval.expire_after` (SIGHUP reload) for requests asked from now on; a pending
   * request keeps the expiry it was stored with.
   * @param ms how long a new request may wait.
   */
  setExpireAfter(ms: number): void {
    this.#expireAfterMs = ms;
  }

  /**
   * What policy, the note and the grants say about a validated, normalised call, checking in this
   * order: the note's `allowed_tools` (it can only narrow), `deny`, `ask`, `allow`, an always-allow
   * grant for a dangerous call, then the safety level (dangerous asks; anything else runs).
   * @param call the call, its arguments hash, safety level and the note's allowed tools.
   */
  evaluate(call: GateCall): GateVerdict {
    const verdict = this.#verdict(call);
    if (verdict.action !== 'run') return verdict;
    const { approvedBy, channel, request, rule } = verdict;
    return { action: 'run', auth: this.#issue(call, approvedBy, channel, null, request, rule) };
  }

  /** {@link evaluate}'s verdict, with what a permission to run would be issued with. */
  #verdict(call: GateCall): Exclude<GateVerdict, { action: 'run' }> | RunVerdict {
    if (call.allowedTools !== undefined && !matchesAllowedTools(call.allowedTools, call.name)) {
      const list =
        call.allowedTools.length === 0 ? 'is empty' : `lists only ${call.allowedTools.join(', ')}`;
      return {
        action: 'deny',
        message:
          `This note may not call ${call.name}: its front-matter allowed_tools ${list}. ` +
          `Use one of the allowed tools, or add ${call.name} to allowed_tools if the note should be allowed to call it.`,
      };
    }
    const verdict = evaluatePolicy(this.#policy, call);
    const rule = verdict.rule;
    if (verdict.verdict === 'deny') {
      return {
        action: 'deny',
        message:
          `The vault's policy forbids this call (deny rule "${rule ?? ''}"). ` +
          'Do not retry it unchanged: change the parameters so the rule no longer matches, ' +
          'or ask the vault owner to change the policy.',
        ...(rule === undefined ? {} : { rule }),
      };
    }
    if (verdict.verdict === 'ask') {
      return {
        action: 'ask',
        reason: `policy rule "${rule ?? ''}" asks a human to decide`,
        ...(rule === undefined ? {} : { rule }),
      };
    }
    if (verdict.verdict === 'allow') {
      return {
        action: 'run',
        approvedBy: 'policy',
        channel: 'policy',
        request: null,
        rule: rule ?? null,
      };
    }
    if (call.safety === 'dangerous') {
      const found = this.#grants?.lookup(call);
      if (found?.current === true) {
        const grant = found.grant;
        return {
          action: 'run',
          approvedBy: 'policy',
          channel: 'grant',
          request: grant.request,
          rule: `grant:${grant.rule}`,
        };
      }
      if (found !== undefined) {
        // A grant given for a tool of this name from another pack, or with other parameters: a
        // human granted that tool, not this one.
        const { rule, pack } = found.grant;
        const then =
          pack === (call.identity?.pack ?? null)
            ? `with other parameters than ${call.name} takes now`
            : `for the ${call.name} of the ${pack ?? 'unrecorded'} pack`;
        return {
          action: 'ask',
          reason: `${call.name} is a dangerous tool, and its always-allow grant "${rule}" was given ${then}: a human decides again (always allow renews the grant)`,
        };
      }
      return {
        action: 'ask',
        reason: `${call.name} is a dangerous tool: every call needs a human decision`,
      };
    }
    return { action: 'run', approvedBy: 'auto', channel: 'auto', request: null, rule: null };
  }

  /**
   * Put a call before a human: a new pending request with a fresh nonce.
   * @param input the note, the call, why it waits and its preview.
   * @throws Error when the gate has no request store.
   */
  ask(input: {
    readonly note: string;
    readonly call: GateCall;
    readonly reason: string;
    readonly preview: Preview | null;
    /** Hash of the tool's input schema (see `hashSchema`). */
    readonly schemaHash?: string;
  }): Promise<ApprovalRequest> {
    const requests = this.#need();
    return requests.create({
      note: input.note,
      callId: input.call.id,
      tool: input.call.name,
      argsHash: input.call.argsHash,
      arguments: input.call.arguments,
      reason: input.reason,
      preview: input.preview?.text ?? null,
      ...(input.preview === null ? {} : { previewKind: input.preview.kind }),
      ...(input.preview?.basis === undefined ? {} : { basis: input.preview.basis }),
      ...(input.schemaHash === undefined ? {} : { schemaHash: input.schemaHash }),
      expireAfterMs: this.#expireAfterMs,
    });
  }

  /**
   * Record a human's decision on a pending request (any channel); it counts once, and only while
   * the request is pending and not expired.
   * @param id the request id.
   * @param decision what was decided, by whom, through which channel.
   */
  decide(
    id: string,
    decision: RequestDecision,
  ): Promise<{ ok: true; request: ApprovalRequest } | { ok: false; problem: string }> {
    return this.#need().decide(id, decision);
  }

  /**
   * Turn an approved request into the authorization to run the call with its final arguments,
   * consuming the request (and recording an always-allow grant when asked). The arguments must be
   * the request's own, or a human's edit of them (then `human-modified`).
   * @param request an approved request.
   * @param call the call with its final, validated and normalised arguments.
   * @param note vault-relative path of the note, for the grant's record.
   * @returns the authorization, or a problem when the request is not approved.
   */
  async consume(
    request: ApprovalRequest,
    call: GateCall,
    note: string,
  ): Promise<{ ok: true; auth: Authorization } | { ok: false; problem: string }> {
    const requests = this.#need();
    const current = requests.get(request.id);
    if (current === undefined || current.state !== 'approved' || current.decision === null) {
      return {
        ok: false,
        problem: `no pending approval for this call (the request is ${current?.state ?? 'unknown'})`,
      };
    }
    if (current.callId !== call.id || current.tool !== call.name) {
      return { ok: false, problem: 'the approval was given for another call' };
    }
    // Consumed once: two claims of one approved request (a copy of the note moved in beside the
    // claim) both found it approved while the first consumption was written, and the call ran
    // twice.
    if (!(await requests.setState(current.id, 'consumed', ['approved']))) {
      return { ok: false, problem: 'no pending approval for this call (the request is consumed)' };
    }
    const decision = current.decision;
    const modified = call.argsHash !== current.argsHash;
    if (decision.always && this.#grants !== undefined) {
      await this.#grants.add(decision.scope ?? call.name, {
        by: decision.by,
        channel: decision.channel,
        note,
        request: current.id,
        identity: call.identity,
      });
    }
    return {
      ok: true,
      auth: this.#issue(
        call,
        modified ? 'human-modified' : 'human',
        decision.channel,
        decision.by,
        current.id,
        null,
      ),
    };
  }

  /**
   * Redeem an authorization for a call: true once, when this gate issued it for exactly this call
   * id, tool and arguments hash.
   * @param auth the authorization the caller holds.
   * @param call the call about to run.
   */
  redeem(auth: Authorization, call: RedeemCall): boolean {
    const issued = this.#issued.get(auth);
    if (issued === undefined || this.#redeemed.has(auth)) return false;
    if (auth.callId !== call.id || auth.tool !== call.name || auth.argsHash !== call.argsHash)
      return false;
    // The tool changed between the decision and the run (an MCP server's new list while the call
    // waited for a slot): the grant or the human decided about the tool as it was (review
    // finding).
    if (!sameIdentity(issued.call.identity, call.identity)) return false;
    // A policy reloaded since the permission was issued (SIGHUP) is asked again: a call allowed,
    // granted or approved before a new deny rule, still queued for a slot, ran after the
    // operator forbade it. For a human's approval, deny rules only: an approval stays an approval.
    const reloaded = issued.generation !== this.#generation;
    if (reloaded && evaluatePolicy(this.#policy, issued.call).verdict === 'deny') return false;
    // A permission no human gave stands only while the gate would give it again: queued calls an
    // allow rule let through still ran once the operator had removed it or added an ask rule, and
    // a grant revoked while its call waited still covered it (review finding).
    if (
      !HUMAN_CHANNELS.has(auth.channel) &&
      (reloaded || auth.channel === 'grant') &&
      this.#verdict(issued.call).action !== 'run'
    ) {
      return false;
    }
    this.#redeemed.add(auth);
    return true;
  }

  #issue(
    call: GateCall,
    approvedBy: ApprovedBy,
    channel: AuthorizationChannel,
    by: string | null,
    request: string | null,
    rule: string | null,
  ): Authorization {
    const auth: Authorization = Object.freeze({
      callId: call.id,
      tool: call.name,
      argsHash: call.argsHash,
      approvedBy,
      channel,
      by,
      request,
      rule,
      ...(call.effects === undefined ? {} : { effects: call.effects }),
      ...(call.identity === undefined ? {} : { identity: call.identity }),
    });
    this.#issued.set(auth, { call, generation: this.#generation });
    return auth;
  }

  #need(): ApprovalRequests {
    if (this.#requests === undefined)
      throw new Error('this approval gate has no request store: it cannot ask a human');
    return this.#requests;
  }
}

/**
 * True when two tool identities are the same, or one of them is unknown (a call checked without
 * its tool, as some tests and callers do): a permission is refused only for a known other tool.
 */
export function sameIdentity(
  issued: ToolIdentity | undefined,
  now: ToolIdentity | undefined,
): boolean {
  return (
    issued === undefined ||
    now === undefined ||
    (issued.pack === now.pack && issued.schema === now.schema)
  );
}
