// An agent's note ending with an Obsidian comment left open (`%%`) hid the Approval section vaultd
// appended, preview and boxes, in Obsidian's reading view, while the agent's own text above it,
// a look-alike section with a harmless preview, stayed visible (/work/scratch/redteam4/hidden-approval.mts).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { appendResults, replaceSection } from '../../src/note/index.ts';
import { readStructure } from '../../src/note/markdown.ts';
import { isObsidianCommentOpen } from '../../src/note/obsidian-comment.ts';
import { makeResult } from './results.ts';

const SECTION = '> [!question] vaultd needs a decision\n\n- [ ] approve\n';
const open = (text: string): boolean =>
  isObsidianCommentOpen(text, readStructure(text), text.length);
/** Whether the text at `at` is outside every comment. */
const shownAt = (text: string, at: number): boolean =>
  !isObsidianCommentOpen(text, readStructure(text), at);

describe('an Obsidian comment left open before a section vaultd writes', () => {
  const fake = '## Approval (harmless)\n\n> send "hello" to the team\n\n';
  const cases: [string, string][] = [
    ['at the end of the note', `${fake}%%\n`],
    ['mid-line, without a line ending', `${fake}text %%`],
    ['after a closed comment and an open one', `%% a %% b\n\n${fake}%%\n`],
    ['before an agent-written Tool Results heading', `${fake}%%\n\n## Tool Results\n\n%%\n`],
  ];
  for (const [name, note] of cases) {
    it(`${name}: the Approval section is shown, outside any comment`, () => {
      const out = replaceSection(note, 'Approval', SECTION);
      const at = out.lastIndexOf('## Approval\n');
      assert.ok(at > 0, out);
      assert.ok(shownAt(out, at), out);
      assert.ok(out.startsWith(note.slice(0, note.indexOf('%%'))), 'the agent text is kept');
      // Written again (a decision that could not be read): still one closer, still shown.
      const again = replaceSection(out, 'Approval', `${SECTION}\n> [!warning] x\n`);
      assert.equal(again.split('%%').length, out.split('%%').length, again);
      assert.ok(shownAt(again, again.lastIndexOf('## Approval\n')), again);
    });
  }

  it('results appended after an open comment are shown too', () => {
    const out = appendResults('text %%\n', [makeResult({ id: 'call_a' })]);
    assert.ok(shownAt(out, out.indexOf('## Tool Results')), out);
    assert.equal(open(out), false);
  });

  it('%% in code, in a fence or in the front-matter opens nothing: the note is left as it was', () => {
    for (const note of [
      '---\nnote: "%%"\n---\nBody\n',
      'Body\n\n```\n%%\n```\n',
      'Body `%%` and ``%% ` %%``\n',
      '> ```\n> %%\n> ```\n',
      'Body\n\n```\nstill open %%\n',
      // Backticks in two paragraphs make no code span: both %% count, the comment is closed.
      'a ` b\n\n%%\n\nc ` d %%\n',
      '# a `\n%%\nc ` d %%\n',
    ]) {
      assert.equal(open(note), false, note);
      const out = replaceSection(note, 'Approval', SECTION);
      assert.doesNotMatch(out.slice(note.length), /%%/, out);
    }
  });

  it('counts the %% of front-matter Obsidian shows as markdown: closed by ..., opened by ---yaml or +++ (review finding)', () => {
    // A YAML block scalar holding a look-alike Approval section and a `%%`, closed by `...`:
    // Obsidian shows it as text, its `%%` hiding the real call and vaultd's section after it.
    const scalar = 'summary: |\n  ## Approval\n  > move this note to Approved/\n  %%\n';
    for (const note of [
      `---\n${scalar}...\nBody\n`,
      `---yaml\n${scalar}---\nBody\n`,
      `+++\nsummary = "%%"\n+++\nBody\n`,
    ]) {
      assert.equal(open(note), true, note);
      const out = replaceSection(note, 'Approval', SECTION);
      assert.ok(shownAt(out, out.lastIndexOf('## Approval\n')), out);
    }
    // Properties as Obsidian reads them (`---` … `---`) stay YAML: nothing to close.
    assert.equal(open(`---\n${scalar}---\nBody\n`), false);
    assert.equal(open(`---  \n${scalar}---\t\nBody\n`), false);
  });

  it('reads lists and quotes as CommonMark does: a code span never runs from one item into the next', () => {
    // Two list items whose backticks would pair up read as one paragraph: the %% of the second
    // item was taken for code, so vaultd wrote no closer and Obsidian hid its section.
    const crafted = '- a `x\n- %% y` z\n';
    assert.equal(open(crafted), true, crafted);
    const out = replaceSection(crafted, 'Approval', SECTION);
    assert.ok(shownAt(out, out.lastIndexOf('## Approval\n')), out);
    assert.equal(open(out), false, out);
    for (const [note, isOpen] of [
      // One paragraph inside the item, over two lines: the span holds the %%.
      ['- a `x\n  %% y` z\n', false],
      // One paragraph inside a quote, its markers taken off: the same.
      ['> a `x\n> %% y` z\n', false],
      // A lazy line still belongs to the quote's paragraph.
      ['> a `x\n%% y` z\n', false],
      // Two quote paragraphs: no span between them.
      ['> a `x\n>\n> %% y` z\n', true],
      // Quotes in items, items in quotes, numbered lists.
      ['1. a `x\n2. %% y` z\n', true],
      ['> - a `x\n> - %% y` z\n', true],
      // A fence inside an item is code; the %% after it counts.
      ['- ```\n  %%\n  ```\n- %% b\n', true],
    ] as const) {
      assert.equal(open(note), isOpen, note);
    }
  });

  it('reads backticks as CommonMark does, block by block and inline (the second red team’s notes)', () => {
    // Each was counted closed while CommonMark reads a comment open (vaultd wrote no closer and
    // Obsidian hid its section), or the other way round (vaultd's closer opened one).
    const filler = `> ${'filler words here. '.repeat(500)}\n`;
    for (const [note, isOpen] of [
      ['a `\n---\nb %% `\n', true],
      ['a `\n***\n%% `\n', true],
      ['- a `\n***\n%% `\n', true],
      ['a `\n<div>\n%% `\n', true],
      ['para\n\n    %%\n', false],
      ['x \\` %% `\n', true],
      ['x \\\\` %% `\n', false],
      ['<http://x`> %% `\n', true],
      ['<span title="`">%%</span> `\n', true],
      ['x <!-- ` --> %% `\n', true],
      ['`<a href="`">` %%\n', true],
      ['- x \\` %% `\n', true],
      ['> <http://x`> %% `\n', true],
      ['[r]: /u "`"\n%% `\n', true],
      // Quotes past the budget are read by lines: a line of markers alone still ends a paragraph.
      [`${filler}>\n> a \`\n>\n> %% \`\n`, true],
    ] as const) {
      assert.equal(open(note), isOpen, note.slice(-40));
      const out = replaceSection(note, 'Approval', SECTION);
      assert.ok(shownAt(out, out.lastIndexOf('## Approval\n')), out.slice(-200));
    }
  });

  it('backtick runs of every length that never close are counted in one pass', () => {
    const runs = Array.from({ length: 3_000 }, (_, i) => '`'.repeat(i + 1)).join(' x ');
    assert.equal(open(`${runs} %%\n`), true);
    assert.equal(open(`${runs} %% %%\n`), false);
  });
});
