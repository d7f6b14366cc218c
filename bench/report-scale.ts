import type { ScaleResult } from './scale.js';
import { summarize } from './stats.js';
import type { Row } from './table.js';

/**
 * The scale group's rows. Targets (stated for a size; a run without that size has no such row's target): host RSS with
 * 10,000 sessions ≤ 500 MiB, host idle CPU with 1,000 idle sessions ≤ 1 % of a core, POST → answer p99 ≤ 50 ms with
 * 100 conversations at once; a burst of N× more conversations all answered, within N× the time of the smaller one.
 */
export function scaleRows(scale: ScaleResult): Row[] {
  const rows: Row[] = [];
  const atMost = (limit: number, text: string): Row['target'] => ({ text, met: (value) => value <= limit });
  for (const s of scale.sizes) {
    const n = s.sessions.toLocaleString('en-US');
    const answer = summarize(s.answerMs);
    rows.push(
      { metric: `host with ${n} idle sessions: spawn → ready`, unit: 'ms', pincer: s.startMs, better: 'lower' },
      {
        metric: `host with ${n} idle sessions: RSS`,
        unit: 'MiB',
        pincer: s.rssMiB,
        better: 'lower',
        ...(s.sessions === 10_000 ? { target: atMost(500, '≤ 500 MiB') } : {}),
      },
      {
        metric: `host with ${n} idle sessions: CPU over ${s.idleWindowMs / 1000} s idle (% of one core)`,
        unit: '%',
        pincer: s.idleCpuPercent,
        better: 'lower',
        ...(s.sessions === 1000 ? { target: atMost(1, '≤ 1 %') } : {}),
      },
      { metric: `  POST → answer with ${s.active} conversations sending at once, p50`, unit: 'ms', pincer: answer.p50, better: 'lower' },
      {
        metric: `  POST → answer with ${s.active} conversations sending at once, p99`,
        unit: 'ms',
        pincer: answer.p99,
        better: 'lower',
        ...(s.active === 100 ? { target: atMost(50, 'p99 ≤ 50 ms') } : {}),
      },
    );
  }
  const [small] = scale.bursts;
  for (const b of scale.bursts) {
    const factor = small ? b.conversations / small.conversations : 1;
    const limit = small ? (factor * small.totalMs) / 1000 : Infinity;
    rows.push(
      {
        metric: `${b.conversations} new conversations at once through one host: first POST → all answered`,
        unit: 's',
        pincer: b.totalMs / 1000,
        better: 'lower',
        ...(small && b !== small ? { target: atMost(limit, `≤ ${factor} × ${small.conversations}'s (${limit.toFixed(1)} s)`) } : {}),
      },
      { metric: `  runner processes alive at once, most`, unit: 'count', pincer: b.peakRunners, better: 'lower' },
      {
        metric: `  conversations not answered (or refused)`,
        unit: 'count',
        pincer: b.unanswered + b.refused,
        better: 'lower',
        target: atMost(0, 'none'),
      },
    );
  }
  return rows;
}

/** Conversations of a burst with no answer: a lost message, which fails the run. */
export function scaleLost(scale: ScaleResult | undefined): number {
  return (scale?.bursts ?? []).reduce((sum, b) => sum + b.unanswered + b.refused, 0);
}
