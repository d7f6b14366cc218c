import { describe, expect, it } from 'vitest';
import { buildRows, withSummaries, type BenchResults } from '../bench/report.js';
import { toPrintedRow } from '../bench/table.js';

/** The bench's table is built from results alone; these check the SPEC §8 verdicts, not any timing. */
const results: BenchResults = {
  pickup: {
    watch: { toQuery: [1, 2, 3, 60], toReply: [2, 3, 4, 61], runners: 1 },
    poll: { toQuery: [400, 500, 900, 990], toReply: [401, 501, 901, 991], runners: 8 },
  },
  burst15: {
    watch: { count: 15, runs: 1, seconds: 0.01, secondsPerRun: [0.01], batches: 1, leftBehind: 0 },
    poll: { count: 15, runs: 1, seconds: 0.5, secondsPerRun: [0.5], batches: 3, leftBehind: 0 },
  },
  mcp: { toCommitted: [0.5, 0.6, 0.7] },
};

describe('bench report', () => {
  const rows = buildRows(results).map(toPrintedRow);
  const row = (start: string) => rows.find((r) => r.metric.startsWith(start))!;

  it('judges each SPEC §8 target on Pincer, not on the baseline', () => {
    expect(row('idle pickup: insert → query starts, p50').verdict).toBe('PASS');
    expect(row('idle pickup: insert → query starts, p99').verdict).toBe('MISS');
    expect(row('burst of 15: prompts used').verdict).toBe('PASS');
    expect(row('MCP send_message: call → row committed, p50').verdict).toBe('PASS');
  });

  it('leaves out groups that did not run and shows no baseline where there is none', () => {
    expect(rows.some((r) => r.metric.startsWith('follow-up'))).toBe(false);
    expect(row('MCP send_message: call → row committed, p50').baseline).toBe('—');
  });

  it('writes a summary beside every list of samples', () => {
    const json = withSummaries(results) as { mcp: { toCommitted: { summary: { p50: number }; samples: number[] } } };
    expect(json.mcp.toCommitted.summary.p50).toBe(0.6);
    expect(json.mcp.toCommitted.samples).toEqual([0.5, 0.6, 0.7]);
  });
});
