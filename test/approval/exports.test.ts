import { it } from 'node:test';
import assert from 'node:assert/strict';
import * as approval from '../../src/approval/index.ts';

it('exports exactly the documented runtime surface of src/approval', () => {
  assert.deepEqual(Object.keys(approval).sort(), [
    'APPROVAL_HEADING',
    'APPROVAL_MARKER',
    'ApprovalGate',
    'ApprovalRequests',
    'EXPIRED_REASON',
    'GRANTS_FILE',
    'GrantStore',
    'GrantsFileError',
    'PENDING_CALL_KEY',
    'PolicyRuleError',
    'REQUESTS_FILE',
    'REQUEST_ID_PATTERN',
    'canonicalJson',
    'canonicalText',
    'compileGlob',
    'compileGrant',
    'compilePolicy',
    'decideCall',
    'evaluatePolicy',
    'isExpired',
    'isModified',
    'matchesAllowedTools',
    'matchesRule',
    'newRequestId',
    'parseApprovalSection',
    'parseDuration',
    'parsePolicyRule',
    'readAllowedTools',
    'readApprovalSection',
    'readRequests',
    'rejectionMessage',
    'renderApprovalSection',
    'renderApprovalSectionSliced',
    'resolveDecisions',
    'stripInvisible',
    'tickDecision',
  ]);
});
