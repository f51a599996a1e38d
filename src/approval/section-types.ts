/** The heading text of the section vaultd owns for pending calls (`## Approval`). */
export const APPROVAL_HEADING = 'Approval';

/** The key of the editable JSON block of a pending call; never `tool_call`, so it never runs as written. */
export const PENDING_CALL_KEY = 'pending_call';

/** A call waiting for a human, as shown in the Approval section. */
export interface PendingCall {
  readonly id: string;
  readonly name: string;
  readonly arguments: Readonly<Record<string, unknown>>;
  /** What the call would do, from the tool's `preview` (the message, the diff). */
  readonly preview?: string | undefined;
  /** `diff` shows the preview in a `diff` block. */
  readonly previewKind?: 'text' | 'diff' | undefined;
  /** ISO time the call started waiting. */
  readonly requestedAt: string;
  /**
   * ISO time the call will be rejected as expired: its request's `expiresAt`, the one value the
   * daemon checks, so the note never shows another.
   */
  readonly expiresAt?: string | undefined;
  /** Why it waits (a dangerous tool, an ask rule), shown to the human. */
  readonly reason?: string | undefined;
  /** The pending request's id, shown in the block: a decision counts only for it. */
  readonly nonce?: string | undefined;
  /** Why the last decision could not be read, shown under the call. */
  readonly problems?: readonly string[] | undefined;
  /**
   * The rule the "always allow" box offers instead of the whole tool (see `pinnedRule`): the
   * call's tool with some parameters pinned to this call's values; null offers no box.
   */
  readonly alwaysRule?: string | null | undefined;
}

/** A human's decision on a pending call. `always` means approve and grant the tool. */
export type DecisionKind = 'approve' | 'reject' | 'always' | 'none';

/** What the Approval section says about one pending call, read back from the note. */
export interface PendingDecision {
  readonly id: string;
  /** The tool name in the block (or the heading when the block is unreadable); null when neither says. */
  readonly name: string | null;
  /** The parameters as they are now in the block, possibly edited; null when the block is unreadable. */
  readonly arguments: Record<string, unknown> | null;
  /** `requested_at` of the block; null when absent or unreadable. Trust the ledger's time, not this. */
  readonly requestedAt: string | null;
  /** `nonce` of the block: the pending request the decision is for; null when absent. */
  readonly nonce: string | null;
  /** For `always`: the grant's rule when the human scoped it (`always allow tool(param:glob)`). */
  readonly grantScope?: string | null;
  /** `none` while undecided and whenever `problems` is not empty. */
  readonly decision: DecisionKind;
  /** The text after `Reason:`, when the human wrote one. */
  readonly reason?: string;
  /** Why the section could not be read as a decision; each tells the human what to fix. */
  readonly problems: readonly string[];
}

/** Everything read from a note's Approval section. */
export interface ApprovalSectionRead {
  /** False when the note has no `## Approval` section. */
  readonly found: boolean;
  /** Decisions by call id. */
  readonly decisions: Map<string, PendingDecision>;
  /** Problems not tied to one call (an unclosed fence, a call that cannot be identified). */
  readonly problems: readonly string[];
}
