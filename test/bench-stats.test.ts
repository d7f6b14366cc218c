import { describe, expect, it } from 'vitest';
import { percentile, summarize } from '../bench/stats.js';
import { formatGain, renderTable, toPrintedRow, type Row } from '../bench/table.js';

describe('bench stats', () => {
  it.each([
    [50, 50],
    [90, 90],
    [99, 99],
    [100, 100],
    [1, 1],
  ])('percentile %i of 1..100 is a measured value (nearest rank): %i', (p, expected) => {
    const sorted = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(percentile(sorted, p)).toBe(expected);
  });

  it('summarizes unsorted samples without changing them', () => {
    const samples = [5, 1, 4, 2, 3];
    expect(summarize(samples)).toEqual({ count: 5, min: 1, mean: 3, p50: 3, p90: 5, p99: 5, max: 5 });
    expect(samples).toEqual([5, 1, 4, 2, 3]);
  });

  it('has NaN, not a made-up number, for no samples', () => {
    const summary = summarize([]);
    expect(summary.count).toBe(0);
    expect(summary.p50).toBeNaN();
  });
});

describe('bench table', () => {
  const row = (pincer: number, baseline: number | undefined, better: Row['better'] = 'lower'): Row => ({
    metric: 'x',
    unit: 'ms',
    pincer,
    baseline,
    better,
    target: { text: '≤ 10 ms', met: (v) => v <= 10 },
  });

  it('gives the gain as how many times better Pincer is, in either direction', () => {
    expect(formatGain(row(5, 500))).toBe('×100');
    expect(formatGain(row(200, 100, 'higher'))).toBe('×2.0');
    expect(formatGain(row(5, undefined))).toBe('—');
    expect(formatGain(row(0, 0))).toBe('—');
  });

  it('marks PASS and MISS against the target', () => {
    expect(toPrintedRow(row(9.5, 500)).verdict).toBe('PASS');
    expect(toPrintedRow(row(10.5, 500)).verdict).toBe('MISS');
  });

  it('renders a Markdown table with every row', () => {
    const table = renderTable([toPrintedRow(row(1, 2)), toPrintedRow(row(3, 4))]);
    expect(table.split('\n')).toHaveLength(4);
    expect(table).toContain('| PASS |');
  });
});
