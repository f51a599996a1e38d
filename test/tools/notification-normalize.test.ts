// send_notification's one normal form, and the deny rules it must not let a spelling dodge.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compilePolicy, evaluatePolicy } from '../../src/approval/policy.ts';
import { validateArguments } from '../../src/protocol/validate.ts';
import { sendNotification } from '../../src/tools/send-notification/index.ts';
import type { Tool } from '../../src/protocol/types.ts';

const tool = sendNotification as unknown as Tool;
// E-mail and one Slack channel set up: the normal form refuses a method or channel the config lacks.
const CONFIG = {
  email: { host: 'smtp.example.com', from: 'vaultd@example.com' },
  slack: { channels: { Alerts: 'https://hooks.slack.com/services/T/B/x' } },
};
const normal = (args: Record<string, unknown>, config: Record<string, unknown> = CONFIG) => {
  const checked = validateArguments(tool, { subject: 'Hi', body: 'text', ...args }, config);
  assert.ok(checked.ok, checked.ok ? '' : checked.message);
  return checked.args;
};
const refused = (
  args: Record<string, unknown>,
  config: Record<string, unknown> = CONFIG,
): string => {
  const checked = validateArguments(tool, { subject: 'Hi', body: 'text', ...args }, config);
  assert.equal(checked.ok, false);
  return checked.ok ? '' : checked.message;
};

describe('send_notification normal form', () => {
  it('fills the method from config, trims, folds case, drops invisible characters and #', () => {
    assert.equal(normal({ recipient: 'a@example.com' })['method'], 'email');
    assert.equal(normal({ recipient: 'a' }, { default_method: 'outbox' })['method'], 'outbox');
    assert.equal(
      normal({ recipient: ' \ufeffBoss@Example.COM\u200b ' })['recipient'],
      'boss@example.com',
    );
    assert.equal(normal({ recipient: '#Alerts', method: 'slack' })['recipient'], 'alerts');
    assert.equal(
      normal({ recipient: 'x@example.com', subject: ' Cafe\u0301 ' })['subject'],
      'Café',
    );
    assert.equal(normal({ recipient: 'x@example.com', body: 'a\u0000b\nc' })['body'], 'ab\nc');
  });

  it('refuses several targets in one value and control characters in a recipient', () => {
    assert.match(refused({ recipient: 'b@evil.com,a@example.com' }), /several targets/);
    assert.match(refused({ recipient: 'a@example.com; b@evil.com' }), /several targets/);
    assert.match(
      refused({ recipient: 'Boss <boss@example.com>' }),
      /several targets or a display name/,
    );
    assert.match(refused({ recipient: 'a@example.com\nb@evil.com' }), /control character/);
    assert.match(refused({ recipient: 'alerts general', method: 'slack' }), /several targets/);
  });

  it('refuses a channel or method the config does not set up, before anyone is asked', () => {
    // QA: an unknown Slack channel waited for a human, then failed once approved.
    assert.match(
      refused({ recipient: 'random', method: 'slack' }),
      /unknown Slack channel 'random'.*'Alerts'/,
    );
    assert.match(
      refused({ recipient: 'ops', method: 'discord' }),
      /no Discord channels are configured/,
    );
    assert.match(refused({ recipient: 'a@example.com' }, {}), /method email is not configured/);
    assert.equal(normal({ recipient: '#ALERTS', method: 'slack' })['recipient'], 'alerts');
  });

  it('lets no spelling dodge a deny rule, and no allow rule reach a second target', () => {
    const policy = compilePolicy({
      deny: [
        'send_notification(recipient:boss@example.com)',
        'send_notification(recipient:alerts, method:slack)',
        'send_notification(method:email, recipient:ceo@*)',
      ],
      allow: ['send_notification(recipient:*@example.com)'],
    });
    const verdict = (args: Record<string, unknown>) =>
      evaluatePolicy(policy, { name: 'send_notification', arguments: normal(args) }).verdict;
    for (const spelling of [
      'boss@example.com ',
      '\ufeffboss@example.com',
      'BOSS@Example.com',
      'bo\u200bss@example.com',
    ]) {
      assert.equal(verdict({ recipient: spelling }), 'deny', JSON.stringify(spelling));
    }
    assert.equal(verdict({ recipient: '#alerts', method: 'slack' }), 'deny');
    assert.equal(verdict({ recipient: '#ALERTS', method: 'slack' }), 'deny');
    assert.equal(verdict({ recipient: 'ceo@corp.example' }), 'deny', 'the defaulted method counts');
    assert.equal(verdict({ recipient: 'a@example.com' }), 'allow');
  });
});
