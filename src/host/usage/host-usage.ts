import type Database from 'better-sqlite3';
import { prepared } from '../../db/connection.js';
import type { InboundRow } from '../../db/types.js';
import { errorMessage, type Logger } from '../../shared/log.js';
import { isoNow } from '../../shared/time.js';
import type { AgentGroup, SessionRecord } from '../central-db/types.js';
import type { HostMetrics } from '../metrics.js';
import { Budgets, type BudgetVerdict } from './budgets.js';
import { UsageLedger } from './ledger.js';
import type { PriceTable } from './prices.js';

/**
 * What the host does with usage on each session tick: copy new turns into the ledger (and the metrics), and gate
 * turns on the group's budgets. Kept out of host.ts, which only calls these three methods.
 */
export class HostUsage {
  readonly ledger: UsageLedger;
  readonly budgets: Budgets;

  constructor(
    db: Database.Database,
    prices: PriceTable,
    private readonly log: Logger,
    private readonly metrics?: HostMetrics,
  ) {
    this.ledger = new UsageLedger(db, prices, log);
    this.budgets = new Budgets(db, this.ledger);
  }

  /** Copy the session's new usage rows into the ledger; a failure is logged and retried on the next tick. */
  collect(session: SessionRecord, sessionDb: Database.Database): void {
    try {
      for (const turn of this.ledger.collect(session, sessionDb)) this.metrics?.turn(turn);
    } catch (err) {
      this.log.warn(`usage of ${session.id} not collected: ${errorMessage(err)}`);
    }
  }

  /** Whether the group may start a turn now; a refusal is counted. */
  gate(group: AgentGroup): BudgetVerdict {
    const verdict = this.budgets.check(group);
    if (verdict.over) this.metrics?.budgetRefusals.inc({ period: verdict.budget.period, unit: verdict.budget.unit });
    return verdict;
  }

  /**
   * Refuse the session's due messages: mark them failed with the notice as their error (one try counted, so a
   * recurring task still gets its next occurrence). Returns the rows, so the chat can be told.
   */
  refuseDue(sessionDb: Database.Database, notice: string): InboundRow[] {
    return prepared(
      sessionDb,
      `UPDATE messages_in SET status = 'failed', status_changed = @now, tries = tries + 1, last_error = @notice
       WHERE status = 'pending' AND trigger = 1 AND (process_after IS NULL OR julianday(process_after) <= julianday(@now))
         AND NOT (kind = 'system' AND CASE WHEN json_valid(content)
           THEN coalesce(json_extract(content, '$.type') = 'question_response', 0) ELSE 0 END)
       RETURNING *`,
    ).all({ now: isoNow(), notice }) as InboundRow[];
  }
}
