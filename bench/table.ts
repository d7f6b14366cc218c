/**
 * The printed table: one row per number, Pincer (wake-on-change) beside the baseline (fixed-interval
 * polling) measured in the same run, how many times better Pincer is, and the target (docs/performance.md) with PASS/MISS.
 */
export type Unit = 'ms' | 's' | 'msg/s' | '%' | 'MiB' | 'count' | 'ratio';

export interface Row {
  /** what was measured. */
  metric: string;
  unit: Unit;
  pincer: number;
  /** the baseline's value; undefined where there is no baseline (the MCP server has no poll mode). */
  baseline?: number;
  /** which direction is better, for the gain column. */
  better: 'lower' | 'higher';
  /** the target as text and as a check; undefined where there is none. */
  target?: { text: string; met: (value: number) => boolean };
}

export interface PrintedRow {
  metric: string;
  pincer: string;
  baseline: string;
  gain: string;
  target: string;
  verdict: '' | 'PASS' | 'MISS';
}

export function formatValue(value: number | undefined, unit: Unit): string {
  if (value === undefined) return '—';
  if (Number.isNaN(value)) return 'n/a';
  switch (unit) {
    case 'ms':
      return `${value < 10 ? value.toFixed(2) : value < 100 ? value.toFixed(1) : value.toFixed(0)} ms`;
    case 's':
      return `${value.toFixed(2)} s`;
    case 'msg/s':
      return `${value.toFixed(0)} msg/s`;
    case '%':
      return `${value.toFixed(3)} %`;
    case 'MiB':
      return `${value.toFixed(1)} MiB`;
    case 'count':
      return String(Math.round(value));
    case 'ratio':
      return `×${value.toFixed(2)}`;
  }
}

/** "×12" when Pincer is 12 times better, "×0.8" when it is worse; "—" when there is nothing to compare. */
export function formatGain(row: Row): string {
  if (row.baseline === undefined || Number.isNaN(row.baseline) || Number.isNaN(row.pincer)) return '—';
  const ratio = row.better === 'lower' ? row.baseline / row.pincer : row.pincer / row.baseline;
  if (!Number.isFinite(ratio) || ratio === 0) return '—';
  return `×${ratio < 10 ? ratio.toFixed(1) : ratio.toFixed(0)}`;
}

export function toPrintedRow(row: Row): PrintedRow {
  return {
    metric: row.metric,
    pincer: formatValue(row.pincer, row.unit),
    baseline: formatValue(row.baseline, row.unit),
    gain: formatGain(row),
    target: row.target?.text ?? '',
    verdict: row.target ? (row.target.met(row.pincer) ? 'PASS' : 'MISS') : '',
  };
}

const HEADERS: PrintedRow = {
  metric: 'measurement',
  pincer: 'Pincer (watch)',
  baseline: 'baseline (poll)',
  gain: 'gain',
  target: 'target',
  verdict: '',
};
const COLUMNS: (keyof PrintedRow)[] = ['metric', 'pincer', 'baseline', 'gain', 'target', 'verdict'];
const RIGHT_ALIGNED = new Set<keyof PrintedRow>(['pincer', 'baseline', 'gain']);

/** A Markdown table, padded so it also reads well in a terminal. */
export function renderTable(rows: PrintedRow[]): string {
  const widths = COLUMNS.map((column) => Math.max(...[HEADERS, ...rows].map((row) => row[column].length)));
  const line = (row: PrintedRow): string =>
    `| ${COLUMNS.map((column, i) => (RIGHT_ALIGNED.has(column) ? row[column].padStart(widths[i]!) : row[column].padEnd(widths[i]!))).join(' | ')} |`;
  const rule = `|${COLUMNS.map((column, i) => (RIGHT_ALIGNED.has(column) ? `${'-'.repeat(widths[i]! + 1)}:` : '-'.repeat(widths[i]! + 2))).join('|')}|`;
  return [line(HEADERS), rule, ...rows.map(line)].join('\n');
}
