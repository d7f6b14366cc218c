import { retryWhileBusy } from '../db/busy.js';
import { errorMessage, type Logger } from '../shared/log.js';
import type { FormattableMessage } from './format.js';
import type { ClaimedMessage, InboundQueue } from './queue.js';
import { runTaskScript, type ScriptOutcome } from './task-script.js';
import { jsonText } from './xml.js';

/**
 * The pre-script stage of tasks. Claimed tasks with a `script` are taken out of the batch and
 * their scripts run in the background, so the poll loop keeps picking up other messages. When a script finishes the
 * task completes (`wakeAgent: false`), fails with the reason (so a recurring series goes on with its next occurrence),
 * or comes back through `onReady` with its `Script output:` to be given to the agent.
 */
export interface TaskScriptOptions {
  cwd: string;
  env: NodeJS.ProcessEnv;
  timeoutMs: number;
  allowEnv: readonly string[];
  /** why no script runs here: each scripted task fails with it (a plain process runner, unless the host allowed them). */
  refused?: string;
}

export class TaskScripts {
  private readonly running = new Set<Promise<void>>();
  /** the rows whose script runs now (the runner tells the host's sweep they are held, see `setHeldRows`) */
  private readonly holding = new Set<string>();
  private readonly abort = new AbortController();

  constructor(
    private readonly queue: InboundQueue,
    private readonly options: TaskScriptOptions,
    private readonly log: Logger,
    private readonly onReady: (message: FormattableMessage) => void,
    /** the rows held by running scripts changed */
    private readonly onHeldChange: () => void = () => undefined,
  ) {}

  /** The ids of the rows whose script runs now. */
  heldIds(): string[] {
    return [...this.holding];
  }

  /** Start the scripts of scripted tasks in `messages`; return the messages that go on to the agent now. */
  divert(messages: ClaimedMessage[]): ClaimedMessage[] {
    const rest: ClaimedMessage[] = [];
    for (const message of messages) {
      if (message.message.kind === 'task' && message.message.content.script) {
        if (this.options.refused !== undefined) this.refuse(message, this.options.refused);
        else this.start(message, message.message.content.script);
      } else {
        rest.push(message);
      }
    }
    return rest;
  }

  get size(): number {
    return this.running.size;
  }

  /** Kill every running script's process group; their rows stay processing for the host to retry. */
  async stopAll(): Promise<void> {
    this.abort.abort();
    await Promise.all(this.running);
  }

  /**
   * A script's outcome written to the DB, waiting out another process's lock; nothing here may reject (nobody awaits
   * it but `stopAll`): on any other error the row stays processing for the host's sweep.
   */
  private async record(what: string, write: () => void): Promise<void> {
    try {
      await retryWhileBusy(write, { what, warn: (line) => this.log.warn(line), giveUp: () => this.abort.signal.aborted });
    } catch (err) {
      this.log.warn(`${what} not recorded: ${errorMessage(err)}`);
    }
  }

  private refuse(message: ClaimedMessage, why: string): void {
    const { row } = message;
    this.log.warn(`task ${row.seq} script not run: ${why}`);
    const done = this.record(`task ${row.seq} refusal`, () => this.queue.fail(row.id, why)).finally(() => this.running.delete(done));
    this.running.add(done);
  }

  private start(message: ClaimedMessage, script: string): void {
    const { row } = message;
    const started = Date.now();
    this.holding.add(row.id);
    this.onHeldChange();
    const run = runTaskScript(script, { ...this.options, signal: this.abort.signal })
      .catch((err: unknown): ScriptOutcome => ({ ok: false, error: `script could not run: ${errorMessage(err)}` }))
      .then(async (outcome) => {
        if (this.abort.signal.aborted) return;
        const took = Date.now() - started;
        if (!outcome.ok) {
          this.log.warn(`task ${row.seq} script failed after ${took} ms: ${outcome.error}`);
          await this.record(`task ${row.seq} failure`, () => this.queue.fail(row.id, outcome.error));
        } else if (!outcome.wakeAgent) {
          this.log.info(`task ${row.seq} script ran in ${took} ms: wakeAgent false, completed without the agent`);
          await this.record(`task ${row.seq} completion`, () => this.queue.complete([row.id]));
        } else {
          this.log.info(`task ${row.seq} script ran in ${took} ms: waking the agent`);
          this.onReady({ ...message, notes: [`Script output:\n${jsonText(outcome.data)}`] });
        }
      })
      .finally(() => {
        this.holding.delete(row.id);
        this.onHeldChange();
      });
    const tracked = run.finally(() => this.running.delete(tracked));
    this.running.add(tracked);
  }
}
