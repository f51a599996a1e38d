/** One sample line of the Prometheus text format. */
export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

/** A metric family: its `# TYPE`, `# HELP` and samples. */
export interface Family {
  readonly type: string;
  readonly help: string;
  readonly samples: Sample[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);
const SUFFIXES = ['_bucket', '_sum', '_count', '_total', '_created'];

/**
 * Parse the Prometheus text exposition format (version 0.0.4) strictly: every line must be a
 * comment, a `# HELP`/`# TYPE` line or a well-formed sample, or this throws naming the line.
 * @param text the body of `/metrics`.
 */
export function parsePrometheusText(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  const familyOf = (name: string): Family => {
    let family = families.get(name);
    if (family === undefined) {
      family = { type: 'untyped', help: '', samples: [] };
      families.set(name, family);
    }
    return family;
  };
  assertOk(text.endsWith('\n'), 'the body ends with a newline');
  for (const [i, line] of text.split('\n').entries()) {
    const where = `line ${i + 1}: ${JSON.stringify(line)}`;
    if (line.trim() === '') continue;
    if (line.startsWith('#')) {
      const m = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line);
      if (m === null) continue; // a plain comment
      const [, kind, name, rest] = m as unknown as [string, string, string, string];
      assertOk(NAME.test(name), `bad metric name at ${where}`);
      const family = familyOf(name);
      if (kind === 'TYPE') {
        assertOk(TYPES.has(rest), `unknown type at ${where}`);
        assertOk(family.samples.length === 0, `TYPE after samples at ${where}`);
        families.set(name, { ...family, type: rest });
      } else {
        families.set(name, { ...family, help: rest });
      }
      continue;
    }
    const sample = parseSample(line, where);
    const base = families.has(sample.name)
      ? sample.name
      : (SUFFIXES.map((s) => (sample.name.endsWith(s) ? sample.name.slice(0, -s.length) : ''))
          .filter((n) => n !== '' && families.has(n))
          .at(0) ?? sample.name);
    familyOf(base).samples.push(sample);
  }
  return families;
}

function parseSample(line: string, where: string): Sample {
  const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)( -?\d+)?$/.exec(line);
  assertOk(m !== null, `malformed sample at ${where}`);
  const [, name, labelText, valueText] = m as unknown as [
    string,
    string,
    string | undefined,
    string,
  ];
  const value = parseValue(valueText);
  assertOk(!Number.isNaN(value) || /^nan$/i.test(valueText), `bad value at ${where}`);
  const labels: Record<string, string> = {};
  if (labelText !== undefined) {
    const body = labelText.slice(1, -1);
    const re = /\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*(,|$)/y;
    let at = 0;
    while (at < body.length) {
      re.lastIndex = at;
      const l = re.exec(body);
      assertOk(l !== null, `malformed labels at ${where}`);
      labels[l[1] as string] = (l[2] as string).replace(/\\(.)/g, (_, c: string) =>
        c === 'n' ? '\n' : c,
      );
      at = re.lastIndex;
    }
  }
  return { name, labels, value };
}

function parseValue(text: string): number {
  // The format takes Go's float syntax: infinities and NaN in any case (prom-client writes `Nan`
  // for a gauge with no samples yet, such as the event-loop lag right after start).
  if (/^\+?inf$/i.test(text)) return Infinity;
  if (/^-inf$/i.test(text)) return -Infinity;
  if (/^nan$/i.test(text)) return NaN;
  return /^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text) ? Number(text) : NaN;
}

function assertOk(condition: boolean, message: string): asserts condition {
  if (!condition) throw new Error(`not Prometheus text: ${message}`);
}

/**
 * The value of the one sample of a family whose labels include `labels`, or undefined.
 * @param family the family.
 * @param labels labels the sample must carry (others are ignored).
 * @param name the sample name, when not the family's own (e.g. `<family>_count`).
 */
export function sampleValue(
  family: Family | undefined,
  labels: Readonly<Record<string, string>>,
  name?: string,
): number | undefined {
  const found = family?.samples.filter(
    (s) =>
      (name === undefined || s.name === name) &&
      Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
  if (found === undefined || found.length === 0) return undefined;
  if (found.length > 1) throw new Error(`${found.length} samples match ${JSON.stringify(labels)}`);
  return found[0]?.value;
}
