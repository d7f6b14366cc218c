import type Database from 'better-sqlite3';
import { prepared } from '../../db/connection.js';
import { formatTime, isoNow, parseTimeInZone } from '../../shared/time.js';
import type { AgentGroup } from '../central-db/types.js';
import type { UsageLedger } from './ledger.js';

/**
 * Budgets per agent group: a daily and a monthly limit, each in tokens (input + output) or US dollars, counted over
 * the ledger in the group's time zone (a day starts at midnight there, a month on the 1st). A turn that would start
 * while any limit is reached is refused; the verdict carries the notice the chat is shown.
 */
export const BUDGET_PERIODS = ['daily', 'monthly'] as const;
export const BUDGET_UNITS = ['tokens', 'usd'] as const;
export type BudgetPeriod = (typeof BUDGET_PERIODS)[number];
export type BudgetUnit = (typeof BUDGET_UNITS)[number];

export interface Budget {
  agentGroupId: string;
  period: BudgetPeriod;
  unit: BudgetUnit;
  amount: number;
  updatedAt: string;
}

export type BudgetVerdict = { over: false } | { over: true; budget: Budget; spent: number; resetsAt: string; notice: string };

export class Budgets {
  constructor(
    private readonly db: Database.Database,
    private readonly ledger: UsageLedger,
  ) {}

  list(agentGroupId?: string): Budget[] {
    const rows = prepared(
      this.db,
      `SELECT agent_group_id AS agentGroupId, period, unit, amount, updated_at AS updatedAt FROM budgets
       WHERE @group IS NULL OR agent_group_id = @group ORDER BY agent_group_id, period, unit`,
    ).all({ group: agentGroupId ?? null }) as Budget[];
    return rows;
  }

  /** Set (or raise, or lower) one limit of a group. */
  set(agentGroupId: string, period: BudgetPeriod, unit: BudgetUnit, amount: number): void {
    if (!Number.isFinite(amount) || amount < 0) throw new Error(`budget amount must be a number ≥ 0, got ${amount}`);
    prepared(
      this.db,
      `INSERT INTO budgets (agent_group_id, period, unit, amount, updated_at) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (agent_group_id, period, unit) DO UPDATE SET amount = excluded.amount, updated_at = excluded.updated_at`,
    ).run(agentGroupId, period, unit, amount, isoNow());
  }

  /** Remove limits of a group: all of them, or those of one period and/or unit. Returns how many were removed. */
  clear(agentGroupId: string, period?: BudgetPeriod, unit?: BudgetUnit): number {
    return prepared(
      this.db,
      `DELETE FROM budgets WHERE agent_group_id = @group AND (@period IS NULL OR period = @period) AND (@unit IS NULL OR unit = @unit)`,
    ).run({ group: agentGroupId, period: period ?? null, unit: unit ?? null }).changes;
  }

  /** Whether `group` may start a turn now: the first limit reached, if any, with when it resets. */
  check(group: AgentGroup, now = new Date()): BudgetVerdict {
    const budgets = this.list(group.id);
    if (budgets.length === 0) return { over: false };
    for (const budget of budgets) {
      const window = budgetWindow(budget.period, group.timezone, now);
      const spent = this.ledger.spent(group.id, window.start)[budget.unit];
      if (spent >= budget.amount) {
        return { over: true, budget, spent, resetsAt: window.end, notice: budgetNotice(group, budget, spent, window.end) };
      }
    }
    return { over: false };
  }
}

/** The current day or month in `timeZone`: where it started and where it ends (the reset), as ISO UTC. */
export function budgetWindow(period: BudgetPeriod, timeZone: string, now = new Date()): { start: string; end: string } {
  const [y, m, d] = formatTime(now.toISOString(), timeZone).slice(0, 10).split('-').map(Number) as [number, number, number];
  const date = (year: number, month: number, day: number): string => {
    const utc = new Date(Date.UTC(year, month - 1, day));
    return parseTimeInZone(utc.toISOString().slice(0, 10), timeZone)!;
  };
  return period === 'daily' ? { start: date(y, m, d), end: date(y, m, d + 1) } : { start: date(y, m, 1), end: date(y, m + 1, 1) };
}

function budgetNotice(group: AgentGroup, budget: Budget, spent: number, resetsAt: string): string {
  const amount = (n: number): string => (budget.unit === 'usd' ? `$${n.toFixed(2)}` : `${Math.round(n).toLocaleString('en-US')} tokens`);
  const when = budget.period === 'daily' ? 'today' : 'this month';
  const flag = `--${budget.period}-${budget.unit}`;
  return (
    `The agent "${group.name}" has reached its ${budget.period} budget of ${amount(budget.amount)} (${amount(spent)} used ${when}), ` +
    `so new turns are refused until it resets at ${formatTime(resetsAt, group.timezone)} (${group.timezone}). ` +
    `An admin can raise it: pincer budget set ${group.name} ${flag} <amount>`
  );
}
