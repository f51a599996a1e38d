export { compileGlob, type GlobMatcher, type GlobOptions } from './glob.ts';
export {
  canonicalText,
  compilePolicy,
  evaluatePolicy,
  matchesRule,
  stripInvisible,
  parsePolicyRule,
  PolicyRuleError,
  type CompiledPolicy,
  type CompiledRule,
  type ParamCondition,
  type PolicyList,
  type PolicyRules,
  type PolicyVerdict,
  type RuleCall,
} from './policy.ts';
export { matchesAllowedTools, readAllowedTools, type AllowedToolsRead } from './allowed-tools.ts';
export {
  decideCall,
  type AskDecision,
  type CallDecision,
  type DecideInput,
  type DenyDecision,
  type GrantLookup,
  type RunDecision,
} from './decide.ts';
export {
  compileGrant,
  grantToolName,
  GrantStore,
  GrantsFileError,
  GRANTS_FILE,
  pinnedRule,
  toolIdentity,
  type AddGrantOptions,
  type Grant,
  type GrantCall,
  type GrantMatch,
  type ToolIdentity,
} from './grants.ts';
export {
  ApprovalGate,
  type ApprovalGateOptions,
  type Authorization,
  type AuthorizationChannel,
  type Gate,
  type GateCall,
  type GateVerdict,
} from './gate.ts';
export {
  ApprovalRequests,
  newRequestId,
  readRequests,
  REQUEST_ID_PATTERN,
  REQUESTS_FILE,
  type ApprovalRequest,
  type DecisionChannel,
  type MoveFolder,
  type NewRequest,
  type RequestDecision,
  type RequestState,
} from './requests.ts';
export {
  APPROVAL_HEADING,
  APPROVAL_MARKER,
  PENDING_CALL_KEY,
  isModified,
  parseApprovalSection,
  readApprovalSection,
  renderApprovalSection,
  renderApprovalSectionSliced,
  type ApprovalSectionOptions,
  type ApprovalSectionRead,
  type DecisionKind,
  type PendingCall,
  type PendingDecision,
} from './section.ts';
export { canonicalJson } from './canonical-json.ts';
export {
  rejectionMessage,
  resolveDecisions,
  type ApproveResolution,
  type MoveDecision,
  type RejectResolution,
  type Resolution,
  type WaitResolution,
} from './resolve.ts';
export { EXPIRED_REASON, isExpired, parseDuration } from './expiry.ts';
export { tickDecision, type TickOutcome } from './tick.ts';
