export {
  APPROVAL_MARKER,
  renderApprovalSection,
  renderApprovalSectionSliced,
  type ApprovalSectionOptions,
} from './section-render.ts';
export { parseApprovalSection, readApprovalSection } from './section-parse.ts';
export {
  APPROVAL_HEADING,
  PENDING_CALL_KEY,
  type ApprovalSectionRead,
  type DecisionKind,
  type PendingCall,
  type PendingDecision,
} from './section-types.ts';
export { isModified } from './canonical-json.ts';
