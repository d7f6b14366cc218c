import type Database from 'better-sqlite3';
import type { TurnUsageRow } from '../../db/usage.js';
import { errorMessage, type Logger } from '../../shared/log.js';
import type { AgentGroup, SessionRecord } from '../central-db/types.js';
import type { HostMetrics } from '../metrics.js';
import type { ProxyMeter } from '../proxy-meter.js';
import { Budgets, type BudgetVerdict } from './budgets.js';
import { conversationKey, UsageLedger } from './ledger.js';
import type { PriceTable } from './prices.js';

/** Batches of usage rows one turn of a session copies at most (the rest in the next turn, at once). */
const BATCHES_PER_TURN = 8;

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

  /**
   * Copy the session's new usage rows into the ledger (none to read when `latestId`, the session's newest row id, is
   * not past the ledger's cursor), a few batches at a time; a failure is logged and retried on the next turn. Returns
   * whether rows are left to read although the cursor moves (the caller looks again at once, not after its wait).
   */
  async collect(session: SessionRecord, read: (afterId: number) => Promise<TurnUsageRow[]>, latestId?: number): Promise<boolean> {
    try {
      let cursor = this.ledger.cursor(session.id);
      for (let batch = 0; batch < BATCHES_PER_TURN; batch++) {
        for (const turn of await this.ledger.collect(session, read, latestId)) this.metrics?.turn(turn);
        const moved = this.ledger.cursor(session.id);
        if (latestId === undefined || moved >= latestId || moved === cursor) return false;
        cursor = moved;
      }
      return true;
    } catch (err) {
      this.log.warn(`usage of ${session.id} not collected: ${errorMessage(err)}`);
      return false;
    }
  }

  /** The session's database was set up afresh: read its usage rows from the first again. */
  sessionReset(sessionId: string): void {
    this.ledger.restart(sessionId);
  }

  /** Whether the group may start a turn now; a refusal is counted. */
  gate(group: AgentGroup): BudgetVerdict {
    const verdict = this.budgets.check(group);
    if (verdict.over) this.metrics?.budgetRefusals.inc({ period: verdict.budget.period, unit: verdict.budget.unit });
    return verdict;
  }

  /**
   * The credential proxy's meter: a session's model calls go into the ledger as the upstream reports them, and none
   * is forwarded while its group is over budget. `sessionOf` answers from the host's records (undefined: a session
   * the host no longer knows; its calls are refused).
   */
  proxyMeter(sessionOf: (sessionId: string) => { session: SessionRecord; group: AgentGroup } | undefined): ProxyMeter {
    return {
      refusal: (sessionId) => {
        const known = sessionOf(sessionId);
        if (!known) return `Pincer credential proxy: the session ${sessionId} is not known to the host`;
        const verdict = this.gate(known.group);
        return verdict.over ? `Pincer credential proxy: model calls are refused. ${verdict.notice}` : undefined;
      },
      started: (sessionId, api) => {
        const known = sessionOf(sessionId);
        return this.ledger.startCall({
          sessionId,
          agentGroupId: known?.group.id ?? 'unknown',
          conversation: known ? conversationKey(known.session) : 'unknown',
          api,
        });
      },
      finished: (id, usage, durationMs) => {
        try {
          const recorded = this.ledger.finishCall(id, usage, durationMs);
          if (recorded) this.metrics?.modelUsage(recorded);
        } catch (err) {
          this.log.warn(`usage of proxy call ${id} not recorded: ${errorMessage(err)}`);
        }
      },
    };
  }
}
