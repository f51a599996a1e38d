/**
 * The first line the normal form of a compound command line starts with: a shell comment, so it
 * changes nothing that runs, and a line break, a control character, which no policy `allow` rule
 * and no scoped grant ever matches (src/approval/policy.ts). A prefix rule such as
 * `shell_exec(command:npm test*)` therefore never lets `npm test; rm -rf ~` run without a human.
 */
export const COMPOUND_MARKER =
  '# vaultd: a compound command line (operators, substitutions or redirections); prefix allow rules do not apply\n';

// Shell operators, substitutions, expansions and redirections; matched anywhere, quoted or not,
// because telling a quoted `;` from a real one needs a shell parser, and erring here only means
// a human decides. `$` covers `$(…)`, `${…}` (whose `@P` form can run a substitution) and `$'…'`.
const COMPOUND = /[;&|<>`$\n\r()]/;
// Quoting or escaping: the spaces inside may mean something, so they are left as written.
const QUOTING = /['"\\]/;

/**
 * Whether a command line is more than one simple command: it holds a separator (`;`, `&`, `&&`,
 * `||`, `|`, a newline), a substitution or expansion (`$(…)`, backticks, `${…}`), a redirection
 * (`<`, `>`), a subshell or a group.
 * @param command the command line, without the marker.
 */
export function isCompound(command: string): boolean {
  return COMPOUND.test(command);
}

/**
 * The one normal form of a command line, which policy, approval, the preview and the sandbox all
 * see: Unicode NFC, surrounding whitespace trimmed, runs of blanks collapsed to one space when
 * nothing is quoted or escaped (so `npm   test` is `npm test`), and a compound command line
 * prefixed with {@link COMPOUND_MARKER}. Applying it twice gives the same text.
 * @param command the command line as the agent (or a human editing it) wrote it.
 */
export function normalizeCommand(command: string): string {
  let text = command.normalize('NFC');
  while (text.startsWith(COMPOUND_MARKER)) text = text.slice(COMPOUND_MARKER.length);
  text = text.trim();
  if (!QUOTING.test(text) && !/[\n\r]/.test(text)) text = text.replace(/[ \t]+/g, ' ');
  return isCompound(text) ? COMPOUND_MARKER + text : text;
}

/**
 * The command line without the marker, for messages.
 * @param command a normalised command line.
 */
export function displayCommand(command: string): string {
  return command.startsWith(COMPOUND_MARKER) ? command.slice(COMPOUND_MARKER.length) : command;
}
