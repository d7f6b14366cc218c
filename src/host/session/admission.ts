import type { Logger } from '../../shared/log.js';
import type { AgentGroup } from '../central-db/types.js';
import type { SessionHandle } from './delivery.js';
import type { HostUsage } from '../usage/host-usage.js';
import type { SessionPort } from './port.js';

/** A held start (the model runtime not ready) is retried after 1 s, then twice as long each time, up to 30 s. */
const HOLD_RETRY_BASE_MS = 1000;
const HOLD_RETRY_MAX_MS = 30_000;
/** The chat is told once a start has been held this many times in a row. */
const HOLD_NOTICE_AT = 3;

export interface AdmissionDeps {
  port: SessionPort;
  usage: HostUsage;
  log: Logger;
  /** why no runner of `group` may start now (its model runtime has no generation to serve), or undefined */
  modelRuntimeHold?(group: AgentGroup): string | undefined;
  /** tell the session's chat (a start held {@link HOLD_NOTICE_AT} times in a row) */
  notify(text: string): Promise<void>;
}

/**
 * The budget stage of a session's pipeline: tells the session whether the group's budget admits turns and whether
 * its model runtime holds runner starts, whenever that changed — on every turn and before every write, so a budget
 * raised since the last turn never leaves the session refusing the message it is given now.
 */
export class AdmissionStage {
  private admitted: string | undefined;
  /** the admission call in flight: the next one waits for it, so a raise is never overtaken by an older refusal */
  private admitting: Promise<void> = Promise.resolve();
  private held = 0;

  constructor(
    private readonly sessionId: string,
    private readonly deps: AdmissionDeps,
  ) {}

  /** Why the group's runners are held now, if they are (read once per turn). */
  hold(group: AgentGroup): string | undefined {
    return this.deps.modelRuntimeHold?.(group);
  }

  admit(handle: SessionHandle, hold?: string): Promise<void> {
    // One at a time, each reading the budget when its turn comes: two callers that both read "unchanged" while an
    // older call was still on its way would let that older admission stand after a raise.
    const next = this.admitting.then(() => this.admitNow(handle, hold ?? this.hold(handle.group)));
    this.admitting = next.catch(() => {
      // the caller of `next` gets its failure; the chain only waits for it to settle
    });
    return next;
  }

  /**
   * After a turn's admission: a start held again backs off (returns how long the next `sync` may wait at most), and
   * the chat is told once it has happened {@link HOLD_NOTICE_AT} times in a row; no hold resets the count.
   */
  async afterHold(hold: string | undefined): Promise<number | undefined> {
    if (hold === undefined) {
      this.held = 0;
      return undefined;
    }
    this.held += 1;
    if (this.held === 1 || this.held === HOLD_NOTICE_AT) this.deps.log.warn(`session ${this.sessionId}: runner start held (${this.held} in a row): ${hold}`);
    if (this.held === HOLD_NOTICE_AT) await this.deps.notify(`The agent cannot start yet: ${hold}. Your messages wait; retrying with back-off.`);
    return Math.min(HOLD_RETRY_BASE_MS * 2 ** Math.min(this.held - 1, 5), HOLD_RETRY_MAX_MS);
  }

  private async admitNow(handle: SessionHandle, hold: string | undefined): Promise<void> {
    const budget = this.deps.usage.budgets.check(handle.group);
    const admission = `${budget.over}\n${hold ?? ''}`;
    if (admission === this.admitted) return;
    await this.deps.port.setAdmission({ over: budget.over, notice: budget.over ? budget.notice : '', ...(hold !== undefined ? { hold } : {}) });
    this.admitted = admission;
  }
}
