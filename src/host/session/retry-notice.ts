/**
 * The first failed try of a message reaches its chat at once: "the agent failed: transport error …; retrying in 2 s
 * (try 1 of 5)". Without it a user saw nothing for minutes while the host retried with back-off, then one "given up".
 * Later tries stay quiet (the final failure has its own notice); one notice per conversation per sweep, however many
 * messages the failed batch held.
 */
import type { InboundRow } from '../../db/types.js';
import { retryDelayMs } from './sweep.js';
import type { HostConfig } from '../types.js';

export interface RetryNotice {
  row: InboundRow;
  text: string;
}

export function firstTryNotices(retried: InboundRow[], config: HostConfig['sweep']): RetryNotice[] {
  const seen = new Set<string>();
  const notices: RetryNotice[] = [];
  for (const row of retried) {
    if (row.tries !== 1 || row.trigger !== 1) continue;
    const key = `${row.channel_type ?? ''}\u0000${row.platform_id ?? ''}\u0000${row.thread_id ?? ''}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const seconds = Math.max(1, Math.round(retryDelayMs(row.tries, config) / 1000));
    const why = row.last_error ?? 'the runner stopped before answering';
    notices.push({ row, text: `the agent failed: ${why}; retrying in ${seconds} s (try 1 of ${config.maxTries})` });
  }
  return notices;
}
