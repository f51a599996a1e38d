import type { Tool, ToolCall } from '../protocol/types.ts';
import { evaluatePolicy, type CompiledPolicy } from './policy.ts';
import { matchesAllowedTools } from './allowed-tools.ts';

/** What {@link decideCall} needs of the grant store. */
export interface GrantLookup {
  has(tool: string): boolean;
}

/** Input of {@link decideCall}. */
export interface DecideInput {
  readonly call: Pick<ToolCall, 'name' | 'arguments'>;
  readonly tool: Pick<Tool, 'name' | 'safety'>;
  readonly policy: CompiledPolicy;
  readonly grants: GrantLookup;
  /** The note's front-matter `allowed_tools`, when it has one (see `readAllowedTools`). */
  readonly allowedTools?: readonly string[] | undefined;
}

/** Run now; `rule` names the policy rule or grant that let it run. */
export interface RunDecision {
  readonly action: 'run';
  readonly approvedBy: 'auto' | 'policy';
  /** The allow rule as written, or `grant:<tool>` for an always-allow grant; absent for `auto`. */
  readonly rule?: string;
}

/** Wait for a human; `reason` says why, for the Approval section and the log. */
export interface AskDecision {
  readonly action: 'ask';
  readonly reason: string;
  /** The ask rule as written, when a rule asked. */
  readonly rule?: string;
}

/** Never run; `message` tells the agent what happened and what to do. */
export interface DenyDecision {
  readonly action: 'deny';
  readonly code: 'PERMISSION_DENIED';
  readonly message: string;
  /** The deny rule as written, when a rule denied. */
  readonly rule?: string;
}

/** The outcome of {@link decideCall}. */
export type CallDecision = RunDecision | AskDecision | DenyDecision;

/**
 * Decide whether a validated call runs, waits for a human or is denied, checking in this order:
 * the note's `allowed_tools` (it can only narrow), policy `deny` (never overridden by a grant),
 * policy `ask` (asks even for a safe tool), policy `allow`, an always-allow grant for a dangerous
 * tool, then the tool's safety level (dangerous asks, anything else runs as `auto`). A grant runs
 * with `approvedBy: 'policy'`: it is a standing rule a human made, not a look at this call.
 * @param input the call, its tool, the compiled policy, the grants and the note's allowed tools.
 */
export function decideCall(input: DecideInput): CallDecision {
  const { call, tool, policy, grants, allowedTools } = input;
  if (allowedTools !== undefined && !matchesAllowedTools(allowedTools, call.name)) {
    const list = allowedTools.length === 0 ? 'is empty' : `lists only ${allowedTools.join(', ')}`;
    return {
      action: 'deny',
      code: 'PERMISSION_DENIED',
      message:
        `This note may not call ${call.name}: its front-matter allowed_tools ${list}. ` +
        `Use one of the allowed tools, or add ${call.name} to allowed_tools if the note should be allowed to call it.`,
    };
  }
  const verdict = evaluatePolicy(policy, call);
  if (verdict.verdict === 'deny') {
    return {
      action: 'deny',
      code: 'PERMISSION_DENIED',
      message:
        `The vault's policy forbids this call (deny rule "${verdict.rule ?? ''}"). ` +
        'Do not retry it unchanged: change the parameters so the rule no longer matches, ' +
        'or ask the vault owner to change the policy.',
      ...(verdict.rule === undefined ? {} : { rule: verdict.rule }),
    };
  }
  if (verdict.verdict === 'ask') {
    return {
      action: 'ask',
      reason: `policy rule "${verdict.rule ?? ''}" asks a human to decide`,
      ...(verdict.rule === undefined ? {} : { rule: verdict.rule }),
    };
  }
  if (verdict.verdict === 'allow') {
    return {
      action: 'run',
      approvedBy: 'policy',
      ...(verdict.rule === undefined ? {} : { rule: verdict.rule }),
    };
  }
  if (tool.safety === 'dangerous') {
    if (grants.has(tool.name))
      return { action: 'run', approvedBy: 'policy', rule: `grant:${tool.name}` };
    return {
      action: 'ask',
      reason: `${tool.name} is a dangerous tool: every call needs a human decision`,
    };
  }
  return { action: 'run', approvedBy: 'auto' };
}
