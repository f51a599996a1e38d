import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { compileGlob } from '../../src/approval/glob.ts';
import {
  compilePolicy,
  evaluatePolicy,
  parsePolicyRule,
  PolicyRuleError,
} from '../../src/approval/policy.ts';

describe('compileGlob', () => {
  const cases: [string, string, boolean][] = [
    ['*', '', true],
    ['*', 'anything\nwith newline', true],
    ['*@example.com', 'bob@example.com', true],
    ['*@example.com', 'bob@example.com.evil.org', false],
    ['*@example.com', 'bob@exampleXcom', false],
    ['a?c', 'abc', true],
    ['a?c', 'ac', false],
    ['a?c', 'a😀c', true],
    ['git_*', 'git_push', true],
    ['git_*', 'github', false],
    ['a\\*b', 'a*b', true],
    ['a\\*b', 'axxb', false],
    ['a\\?', 'a?', true],
    ['a\\?', 'ab', false],
    ['(x).[y]+', '(x).[y]+', true],
    ['*a*a*a*a*a*a*b', 'a'.repeat(200), false],
    ['Notes/*', 'notes/x', false],
  ];
  for (const [glob, value, expected] of cases) {
    it(`${JSON.stringify(glob)} ${expected ? 'matches' : 'does not match'} ${JSON.stringify(value.slice(0, 30))}`, () => {
      assert.equal(compileGlob(glob)(value), expected);
    });
  }
  it('ignores case only when asked', () => {
    assert.equal(compileGlob('*@Example.com', { ignoreCase: true })('BOB@EXAMPLE.COM'), true);
    assert.equal(compileGlob('*@Example.com')('BOB@EXAMPLE.COM'), false);
  });
});

describe('parsePolicyRule', () => {
  it('reads a bare tool, a tool glob and parameter globs', () => {
    assert.deepEqual(parsePolicyRule('search_web'), { tool: 'search_web', params: [] });
    assert.deepEqual(parsePolicyRule(' git_* '), { tool: 'git_*', params: [] });
    assert.deepEqual(parsePolicyRule('send_notification(recipient:*@example.com, method: email)'), {
      tool: 'send_notification',
      params: [
        { param: 'recipient', glob: '*@example.com' },
        { param: 'method', glob: 'email' },
      ],
    });
  });
  it('reads quoted patterns holding commas, spaces and escaped quotes', () => {
    assert.deepEqual(parsePolicyRule('shell_exec(command:"rm -rf *, \\"x\\"", cwd:"")'), {
      tool: 'shell_exec',
      params: [
        { param: 'command', glob: 'rm -rf *, \\"x\\"' },
        { param: 'cwd', glob: '' },
      ],
    });
  });
  const malformed: [string, RegExp][] = [
    ['', /empty/],
    ['Send_Notification', /not a tool name/],
    ['send-notification', /not a tool name/],
    ['send_notification(recipient:x', /closing "\)"/],
    ['send_notification()', /parentheses are empty/],
    ['send_notification(recipient)', /expected "param:glob"/],
    ['send_notification(recipient:)', /pattern of "recipient" is empty/],
    ['send_notification(a:x, a:y)', /appears twice/],
    ['send_notification(a b:x)', /not a parameter name/],
    ['send_notification(a:"x)', /no closing quote/],
    ['send_notification(a:"x" y)', /unexpected/],
  ];
  for (const [rule, problem] of malformed) {
    it(`rejects ${JSON.stringify(rule)}`, () => {
      const parsed = parsePolicyRule(rule);
      assert.equal(typeof parsed, 'string');
      assert.match(parsed as string, problem);
    });
  }
});

describe('compilePolicy', () => {
  it('throws a PolicyRuleError quoting the malformed rule and its place', () => {
    assert.throws(
      () =>
        compilePolicy({
          allow: ['search_web'],
          deny: ['read_file', 'send_notification(recipient)'],
        }),
      (error: unknown) => {
        assert.ok(error instanceof PolicyRuleError);
        assert.equal(error.list, 'deny');
        assert.equal(error.index, 1);
        assert.match(error.message, /^policy\.deny\[1\] "send_notification\(recipient\)": /);
        return true;
      },
    );
  });
  it('throws on a rule that is not a string and on a list that is not a list', () => {
    assert.throws(
      () => compilePolicy({ ask: [42 as unknown as string] }),
      /policy\.ask\[0\] 42: a rule must be a string/,
    );
    assert.throws(
      () => compilePolicy({ allow: 'search_web' as unknown as string[] }),
      /policy\.allow must be a list/,
    );
  });
  it('freezes the compiled policy', () => {
    const policy = compilePolicy({ allow: ['search_web'] });
    assert.ok(
      Object.isFrozen(policy) && Object.isFrozen(policy.allow) && Object.isFrozen(policy.allow[0]),
    );
  });
});

describe('evaluatePolicy', () => {
  const policy = compilePolicy({
    deny: ['send_notification(recipient:*@evil.com)', 'shell_*', 'write_file(path:.obsidian/*)'],
    ask: ['search_web(query:*password*)', 'git_push(force:true)'],
    allow: [
      'send_notification(recipient:*@example.com, method:email)',
      'search_web',
      'list_*',
      'create_directory(depth:3)',
      'tag(tags:urgent)',
      'mail(to:*@example.com)',
    ],
  });
  const table: [string, Record<string, unknown>, string, string | undefined][] = [
    [
      'send_notification',
      { recipient: 'bob@example.com', method: 'email' },
      'allow',
      'send_notification(recipient:*@example.com, method:email)',
    ],
    ['send_notification', { recipient: 'bob@example.com', method: 'slack' }, 'none', undefined],
    ['send_notification', { recipient: 'bob@example.com' }, 'none', undefined],
    ['send_notification', { recipient: 'BOB@EXAMPLE.COM', method: 'email' }, 'none', undefined],
    [
      'send_notification',
      { recipient: 'mallory@evil.com', method: 'email' },
      'deny',
      'send_notification(recipient:*@evil.com)',
    ],
    [
      'send_notification',
      { recipient: 'Mallory@EVIL.com' },
      'deny',
      'send_notification(recipient:*@evil.com)',
    ],
    ['send_notification', { recipient: null }, 'none', undefined],
    ['shell_exec', { command: 'ls' }, 'deny', 'shell_*'],
    ['shell', {}, 'none', undefined],
    ['write_file', { path: '.obsidian/app.json' }, 'deny', 'write_file(path:.obsidian/*)'],
    ['write_file', { path: 'Notes/a.md' }, 'none', undefined],
    ['search_web', { query: 'my PASSWORD reset' }, 'ask', 'search_web(query:*password*)'],
    ['search_web', { query: 'agents' }, 'allow', 'search_web'],
    ['git_push', { force: true }, 'ask', 'git_push(force:true)'],
    ['git_push', { force: false }, 'none', undefined],
    ['git_push', { force: 'true' }, 'ask', 'git_push(force:true)'],
    ['list_directory', { path: '.' }, 'allow', 'list_*'],
    ['create_directory', { depth: 3 }, 'allow', 'create_directory(depth:3)'],
    ['create_directory', { depth: 30 }, 'none', undefined],
    // Lists are checked element by element: an allow needs every element, a deny any element.
    ['tag', { tags: ['urgent'] }, 'allow', 'tag(tags:urgent)'],
    ['tag', { tags: ['b', 'urgent'] }, 'none', undefined],
    ['tag', { tags: [] }, 'none', undefined],
    ['mail', { to: ['a@example.com', 'b@example.com'] }, 'allow', 'mail(to:*@example.com)'],
    ['mail', { to: ['a@example.com', 'b@evil.com'] }, 'none', undefined],
    [
      'send_notification',
      { recipient: ['a@example.com', 'm@evil.com'] },
      'deny',
      'send_notification(recipient:*@evil.com)',
    ],
    // An allow never matches a value with a control character; a deny sees through spellings.
    ['mail', { to: 'a@example.com\nb@evil.com' }, 'none', undefined],
    [
      'send_notification',
      { recipient: '\ufeffm@evil.com ' },
      'deny',
      'send_notification(recipient:*@evil.com)',
    ],
    [
      'send_notification',
      { recipient: 'm@ＥＶＩＬ.com' },
      'deny',
      'send_notification(recipient:*@evil.com)',
    ],
    [
      'send_notification',
      { recipient: 'm@ev\u200bil.com' },
      'deny',
      'send_notification(recipient:*@evil.com)',
    ],
    ['SEARCH_WEB', {}, 'none', undefined],
  ];
  for (const [name, args, verdict, rule] of table) {
    it(`${name}(${JSON.stringify(args)}) → ${verdict}`, () => {
      const result = evaluatePolicy(policy, { name, arguments: args });
      assert.deepEqual(result, rule === undefined ? { verdict } : { verdict, rule });
    });
  }
  it('checks deny before ask before allow, whatever the order in config', () => {
    const all = compilePolicy({ allow: ['x_tool'], ask: ['x_*'], deny: ['*(danger:yes)'] });
    assert.equal(
      evaluatePolicy(all, { name: 'x_tool', arguments: { danger: 'yes' } }).verdict,
      'deny',
    );
    assert.equal(
      evaluatePolicy(all, { name: 'x_tool', arguments: { danger: 'no' } }).verdict,
      'ask',
    );
    assert.equal(
      evaluatePolicy(compilePolicy({ allow: ['x_tool'] }), { name: 'x_tool', arguments: {} })
        .verdict,
      'allow',
    );
  });
  it('does not read a parameter from the prototype chain', () => {
    const p = compilePolicy({ deny: ['t(toString:*)'] });
    assert.equal(evaluatePolicy(p, { name: 't', arguments: {} }).verdict, 'none');
  });
  it('matches deny and ask rules on a path as spelled too, allow rules only on the canonical path', () => {
    const call = {
      name: 'read_file',
      arguments: { path: 'Projects/plan.md' },
      spelledPaths: { path: 'Notes/lnk/plan.md' },
    };
    const verdict = (rules: Parameters<typeof compilePolicy>[0]): string =>
      evaluatePolicy(compilePolicy(rules), call).verdict;
    assert.equal(verdict({ deny: ['read_file(path:Notes/*)'] }), 'deny');
    assert.equal(verdict({ deny: ['read_file(path:Projects/*)'] }), 'deny');
    assert.equal(verdict({ ask: ['read_file(path:Notes/*)'] }), 'ask');
    assert.equal(verdict({ allow: ['read_file(path:Notes/*)'] }), 'none');
    assert.equal(verdict({ allow: ['read_file(path:Projects/*)'] }), 'allow');
  });
});
