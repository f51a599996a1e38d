import { it } from 'node:test';
import assert from 'node:assert/strict';
import * as approval from '../../src/approval/index.ts';

it('exports exactly the documented runtime surface of src/approval', () => {
  assert.deepEqual(Object.keys(approval).sort(), [
    'APPROVAL_HEADING',
    'EXPIRED_REASON',
    'GRANTS_FILE',
    'GrantStore',
    'GrantsFileError',
    'PENDING_CALL_KEY',
    'PolicyRuleError',
    'canonicalJson',
    'compileGlob',
    'compilePolicy',
    'decideCall',
    'evaluatePolicy',
    'isExpired',
    'isModified',
    'matchesAllowedTools',
    'parseApprovalSection',
    'parseDuration',
    'parsePolicyRule',
    'readAllowedTools',
    'readApprovalSection',
    'rejectionMessage',
    'renderApprovalSection',
    'resolveDecisions',
    'tickDecision',
  ]);
});
