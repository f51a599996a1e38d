import { ToolError } from '../../protocol/errors.ts';

const PLACEHOLDER = /\{([a-z_][a-z0-9_]*)\}/gi;

/**
 * The parameters an argv template names (`{name}`).
 * @param argv the template.
 */
export function placeholders(argv: readonly string[]): string[] {
  const names = new Set<string>();
  for (const element of argv) for (const m of element.matchAll(PLACEHOLDER)) names.add(m[1] ?? '');
  return [...names];
}

/**
 * Fill an argv template: each `{param}` is replaced by that parameter's value inside its own
 * element, so a value is never split into several arguments and never reaches a shell. A value
 * that is an array fills a whole element with one argument per item (`["{files}"]` → one
 * argument per file). A parameter that is absent leaves out an element that is only its
 * placeholder, and is an error inside a longer element.
 * @param argv the template, e.g. `["./deploy.sh", "--env={environment}", "{targets}"]`.
 * @param args the validated arguments.
 */
export function fillArgv(
  argv: readonly string[],
  args: Readonly<Record<string, unknown>>,
): string[] {
  const out: string[] = [];
  for (const element of argv) {
    const whole = /^\{([a-z_][a-z0-9_]*)\}$/i.exec(element);
    if (whole !== null) {
      const value = args[whole[1] ?? ''];
      if (value === undefined || value === null) continue;
      // A loop, not push(...): an agent's array of more than ~120,000 items overflows the stack.
      if (Array.isArray(value)) for (const item of value) out.push(text(item));
      else out.push(text(value));
      continue;
    }
    out.push(
      element.replace(PLACEHOLDER, (_m, name: string) => {
        const value = args[name];
        if (value === undefined || value === null) {
          throw new ToolError(
            'INVALID_PARAMS',
            `parameter '${name}' is needed for the argument "${element}"`,
          );
        }
        if (Array.isArray(value)) {
          throw new ToolError(
            'INVALID_PARAMS',
            `parameter '${name}' is a list; it can only fill a whole argument`,
          );
        }
        return text(value);
      }),
    );
  }
  return out;
}

function text(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}
