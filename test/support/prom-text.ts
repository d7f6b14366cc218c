/**
 * A strict reader of the Prometheus text exposition format (version 0.0.4), for tests of `/metrics`: every line must
 * be a `# HELP`, a `# TYPE` or a sample with a valid name, well-formed labels and a number; anything else throws.
 */
export interface PromSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface PromText {
  types: Map<string, string>;
  samples: PromSample[];
  /** the sum of the samples named `name` whose labels include `labels`. */
  value(name: string, labels?: Record<string, string>): number;
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)( -?\d+)?$/;
const LABEL = /\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*(,|$)/y;
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);

export function parsePromText(text: string): PromText {
  const types = new Map<string, string>();
  const samples: PromSample[] = [];
  text.split('\n').forEach((line, index) => {
    const where = `line ${index + 1} ("${line}")`;
    if (line === '') return;
    if (line.startsWith('# HELP ')) {
      if (!NAME.test(line.split(' ')[2] ?? '')) throw new Error(`bad HELP at ${where}`);
      return;
    }
    if (line.startsWith('# TYPE ')) {
      const [, , name = '', type = ''] = line.split(' ');
      if (!NAME.test(name) || !TYPES.has(type)) throw new Error(`bad TYPE at ${where}`);
      if (types.has(name)) throw new Error(`second TYPE for ${name} at ${where}`);
      types.set(name, type);
      return;
    }
    if (line.startsWith('#')) return;
    const m = SAMPLE.exec(line);
    if (!m) throw new Error(`not a sample at ${where}`);
    const labels: Record<string, string> = {};
    const body = m[3] ?? '';
    LABEL.lastIndex = 0;
    while (LABEL.lastIndex < body.length) {
      const start = LABEL.lastIndex;
      const l = LABEL.exec(body);
      if (!l || l.index !== start) throw new Error(`bad labels at ${where}`);
      labels[l[1]!] = l[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
      if (l[3] === '') break;
    }
    const value = m[4] === '+Inf' ? Infinity : m[4] === '-Inf' ? -Infinity : m[4] === 'NaN' ? NaN : Number(m[4]);
    if (Number.isNaN(value) && m[4] !== 'NaN') throw new Error(`bad value at ${where}`);
    const family = [...types.keys()].find((t) => m[1] === t || m[1]!.startsWith(`${t}_`));
    if (!family) throw new Error(`sample before its TYPE at ${where}`);
    samples.push({ name: m[1]!, labels, value });
  });
  return {
    types,
    samples,
    value: (name, want = {}) =>
      samples.filter((s) => s.name === name && Object.entries(want).every(([k, v]) => s.labels[k] === v)).reduce((sum, s) => sum + s.value, 0),
  };
}
