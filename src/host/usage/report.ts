import type Database from 'better-sqlite3';
import { prepared } from '../../db/connection.js';
import { PincerError } from '../../shared/errors.js';

/**
 * Usage reports over the ledger: totals since a time, grouped by agent group, conversation, model, task series or
 * day. `pincer usage` prints one as a table and `GET /v1/usage` returns the same JSON, so both read through here.
 */
export const USAGE_GROUPINGS = ['group', 'conversation', 'model', 'task', 'day'] as const;
export type UsageGrouping = (typeof USAGE_GROUPINGS)[number];

export interface UsageQuery {
  /** `7d`, `24h`, `30m`, or an ISO date/time; default 7d. */
  since?: string;
  /** default `group`. */
  by?: string;
}

export interface UsageTotals {
  /** turns, counting a model call the proxy saw outside any turn the runner reported (a task script's) as one. */
  turns: number;
  /** model calls the credential proxy forwarded and metered (0 where runners call no proxy: the mock, a remote session). */
  calls: number;
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  /** null when no turn in the row has a known cost. */
  costUsd: number | null;
  /** turns in the row whose cost is unknown (no provider cost, no price). */
  unpricedTurns: number;
}

export interface UsageReport {
  since: string;
  by: UsageGrouping;
  /** one row per key, most expensive first (then most tokens). `key` is null for turns that have none (`task` of a chat turn). */
  rows: (UsageTotals & { key: string | null })[];
  total: UsageTotals;
}

const KEY_SQL: Record<UsageGrouping, string> = {
  group: `coalesce((SELECT name FROM agent_groups g WHERE g.id = l.agent_group_id), l.agent_group_id)`,
  conversation: 'l.conversation',
  model: 'l.model',
  task: 'l.series_id',
  day: 'substr(l.at, 1, 10)',
};

// total(), not sum(): sum() of integers fails with "integer overflow" past 2^63, and the rows come from the agent's DB
const TOTALS_SQL = `count(DISTINCT l.session_id || ' ' || l.turn_id) AS turns, count(CASE WHEN l.source = 'proxy' THEN 1 END) AS calls,
  total(l.input_tokens) AS inputTokens, total(l.output_tokens) AS outputTokens,
  total(l.cache_read_tokens) AS cacheReadTokens, total(l.cache_write_tokens) AS cacheWriteTokens,
  CASE WHEN count(l.cost_usd) = 0 THEN NULL ELSE total(l.cost_usd) END AS costUsd, count(DISTINCT CASE WHEN l.cost_usd IS NULL THEN l.session_id || ' ' || l.turn_id END) AS unpricedTurns`;

export function usageReport(db: Database.Database, query: UsageQuery, now = new Date()): UsageReport {
  const by = parseGrouping(query.by);
  const since = parseSince(query.since ?? '7d', now);
  const rows = prepared(
    db,
    `SELECT ${KEY_SQL[by]} AS key, ${TOTALS_SQL} FROM usage_ledger l WHERE l.at >= ? AND l.counted = 1
     GROUP BY key ORDER BY total(l.cost_usd) DESC, total(l.input_tokens) + total(l.output_tokens) DESC, key`,
  ).all(since) as UsageReport['rows'];
  const total = prepared(db, `SELECT ${TOTALS_SQL} FROM usage_ledger l WHERE l.at >= ? AND l.counted = 1`).get(since) as UsageTotals;
  return { since, by, rows, total };
}

function parseGrouping(by: string | undefined): UsageGrouping {
  if (by === undefined) return 'group';
  if ((USAGE_GROUPINGS as readonly string[]).includes(by)) return by as UsageGrouping;
  throw new PincerError('invalid-input', `by: unknown grouping "${by}" (known: ${USAGE_GROUPINGS.join(', ')})`, { field: 'by' });
}

const UNIT_MS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000, w: 7 * 86_400_000 };

/** `7d` → seven days before `now`; `2026-11-01` or a full ISO time → that time. Returns ISO UTC. */
export function parseSince(text: string, now = new Date()): string {
  const relative = /^(\d+)\s*([mhdw])$/.exec(text.trim());
  if (relative) return new Date(now.getTime() - Number(relative[1]) * UNIT_MS[relative[2]!]!).toISOString();
  const ms = /^\d{4}-\d{2}-\d{2}/.test(text.trim()) ? Date.parse(text.trim()) : NaN;
  if (Number.isNaN(ms))
    throw new PincerError('invalid-input', `since: "${text}" is not a duration (30m, 24h, 7d, 2w) or a date (2026-11-01)`, { field: 'since' });
  return new Date(ms).toISOString();
}

/** The report as a plain-text table (what `pincer usage` prints). */
export function formatUsageTable(report: UsageReport): string {
  const header = [report.by, 'turns', 'calls', 'input', 'output', 'cache read', 'cache write', 'cost (USD)'];
  const line = (key: string, t: UsageTotals): string[] => [
    key,
    String(t.turns),
    String(t.calls),
    count(t.inputTokens),
    count(t.outputTokens),
    count(t.cacheReadTokens),
    count(t.cacheWriteTokens),
    t.costUsd === null ? '—' : `${dollars(t.costUsd)}${t.unpricedTurns > 0 ? '*' : ''}`,
  ];
  const body = report.rows.map((row) => line(row.key ?? (report.by === 'task' ? '(not a task)' : '—'), row));
  const table = [header, ...body, line('total', report.total)];
  const widths = header.map((_, i) => Math.max(...table.map((cells) => cells[i]!.length)));
  const render = (cells: string[]): string => cells.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  ');
  const out = [`usage since ${report.since}, by ${report.by}`, render(header), ...body.map(render), render(line('total', report.total))];
  if (report.total.unpricedTurns > 0) out.push(`* ${report.total.unpricedTurns} turn(s) have no known cost (no provider cost, no price for the model)`);
  return out.join('\n');
}

function count(n: number): string {
  return n.toLocaleString('en-US');
}

function dollars(usd: number): string {
  return usd >= 0.01 || usd === 0 ? usd.toFixed(2) : usd.toPrecision(2);
}
