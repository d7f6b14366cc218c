import { describe, expect, it } from 'vitest';
import { buildRows, withSummaries, type BenchResults } from '../bench/report.js';
import { toPrintedRow } from '../bench/table.js';

/** The bench's table is built from results alone; these check the targets' verdicts (docs/performance.md), not any timing. */
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

  it('judges each target on Pincer, not on the baseline', () => {
    expect(row('idle pickup: insert → query starts, p50').verdict).toBe('PASS');
    expect(row('idle pickup: insert → query starts, p99').verdict).toBe('MISS');
    expect(row('burst of 15: prompts used').verdict).toBe('PASS');
    expect(row('MCP send_message: call → row committed, p50').verdict).toBe('PASS');
  });

  it("judges the delay the user's MCP servers add by what a bare client's parallel start of them costs, and a server that never starts by the deadline", () => {
    const bare = { parallel3: [600], parallel10: [2000], serial3: [1500], serial10: [5000] };
    const parallel = buildRows({
      mcpStart: { none: [1000, 1000], one: [1500, 1500], three: [1800, 1800], ten: [3900, 3900], neverStarts: [4200, 4200], bare, startMs: 3000 },
    }).map(toPrintedRow);
    const serial = buildRows({ mcpStart: { none: [1000], one: [1500], three: [2500], ten: [6000], neverStarts: [5200], bare, startMs: 3000 } }).map(
      toPrintedRow,
    );
    const find = (table: typeof parallel, start: string) => table.find((r) => r.metric.startsWith(start))!;
    expect(find(parallel, '  3 healthy')).toMatchObject({ pincer: '800 ms', target: '≤ 1.5 × a bare client starting them at once (0.90 s)', verdict: 'PASS' });
    expect(find(parallel, '  10 healthy')).toMatchObject({
      pincer: '2900 ms',
      target: '≤ 1.5 × a bare client starting them at once (3.00 s)',
      verdict: 'PASS',
    });
    expect(find(parallel, '  with one MCP server that never starts')).toMatchObject({ target: '≤ none + the deadline + 1 s (5.00 s)', verdict: 'PASS' });
    expect(find(serial, '  3 healthy').verdict).toBe('MISS');
    expect(find(serial, '  10 healthy').verdict).toBe('MISS');
    expect(find(serial, '  with one MCP server that never starts').verdict).toBe('MISS');
  });

  it('judges start-up and memory against the goals, the fleet scaled to its size', () => {
    const idle = { windowMs: 30_000, idleBeforeMs: 40_000, cpuPercent: 0, cpuMs: 0, rssMiB: 53.9, anonMiB: 12, pssMiB: 14, ussMiB: 15.2 };
    const fleet = { ...idle, runners: 20, rssMiB: 1070, pssMiB: 290, cpuPercent: 1.2, perRunnerCpuPercent: 0.06, perRunnerRssMiB: 53.5 };
    const memory = buildRows({
      idle: { watch: idle, poll: idle },
      fleet: { watch: fleet, poll: fleet },
      coldStart: {
        watch: { toReady: [60, 70, 200], toFirstReply: [80, 95, 300] },
        poll: { toReady: [1], toFirstReply: [1] },
        bare: [70, 80, 90],
        spare: [20, 25, 40],
      },
    }).map(toPrintedRow);
    const find = (start: string) => memory.find((r) => r.metric.startsWith(start))!;
    expect(find('runner RSS (VmRSS), idle')).toMatchObject({ target: '≤ 54 MiB', verdict: 'PASS' });
    expect(find('runner USS')).toMatchObject({ target: '≤ 15 MiB', verdict: 'MISS' });
    expect(find('20 idle runners: total PSS')).toMatchObject({ target: '≤ 300 MiB (15 MiB each)', verdict: 'PASS' });
    expect(find('20 idle runners: total CPU')).toMatchObject({ target: '≤ 1 % (0.05 % each)', verdict: 'MISS' });
    expect(find('cold start: spawn → ready')).toMatchObject({ verdict: 'PASS' });
    expect(find('cold start: spawn → reply')).toMatchObject({ pincer: '95.0 ms', verdict: 'MISS' });
    // 95 ms over a bare node's 80 ms, in the same run: within ×1.3
    expect(find('  spawn → reply ÷ bare node')).toMatchObject({ pincer: '×1.19', target: '≤ ×1.3', verdict: 'PASS' });
  });

  it('reports the host start with and without the HTTP channel, beside a bare node start', () => {
    const host = buildRows({
      hostStart: { none: [150, 170, 400], http: [200, 210, 500], noneCpu: [120, 130, 140], httpCpu: [180, 190, 200], bare: [60, 70, 80] },
    }).map(toPrintedRow);
    expect(host.map((r) => [r.metric.trim().split(',')[0], r.pincer])).toEqual([
      ['host start: spawn → ready', '170 ms'],
      ['CPU time to ready', '130 ms'],
      ['host start with --http (HTTP channel', '210 ms'],
      ['CPU time to ready with --http', '190 ms'],
      ["for comparison: a bare node -e '' (spawn → exit)", '70.0 ms'],
    ]);
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
