import type { ConfigFile } from '../../db/config-file.js';
import type { Answer, AnswerRouting } from '../../db/questions.js';
import type { TaskCommand } from '../../db/tasks.js';
import type { InboundRow } from '../../db/types.js';
import type { TurnUsageRow } from '../../db/usage.js';
import type { Admission, DrainResult, InboxRow, OutboundResult, SessionPort, SessionSnapshot, SessionState } from './port.js';
import type { RemoteSessionPort } from './remote-port.js';

/**
 * A session port that hands each call to the remote port of its current launch (a `session-serve` process on this
 * machine, or a pod): what differs is how a launch is found or started (`forward`) and the calls that mean something
 * when no launch runs, which the subclass answers itself.
 */
export abstract class ForwardingSessionPort implements SessionPort {
  abstract readonly sessionId: string;

  /** Run `call` on the current launch's port, starting a launch when needed; a launch that stops answering is ended. */
  protected abstract forward<T>(call: (port: RemoteSessionPort) => Promise<T>): Promise<T>;

  abstract sync(afterVersion: number, afterSeq: number, waitMs: number, signal?: AbortSignal): Promise<SessionSnapshot>;
  abstract publishConfig(config: ConfigFile, secrets?: Record<string, string>): Promise<void>;
  abstract setAdmission(admission: Admission): Promise<void>;
  abstract drain(): Promise<DrainResult>;
  abstract close(): Promise<void>;

  accept(row: InboxRow): Promise<{ id: string; seq: number }> {
    return this.forward((p) => p.accept(row));
  }
  answer(answer: Answer, routing: AnswerRouting): Promise<{ id: string; seq: number; late: boolean }> {
    return this.forward((p) => p.answer(answer, routing));
  }
  state(): Promise<SessionState> {
    return this.forward((p) => p.state());
  }
  ack(results: OutboundResult[]): Promise<void> {
    return this.forward((p) => p.ack(results));
  }
  platformMessageIdOf(seq: number): Promise<string | null> {
    return this.forward((p) => p.platformMessageIdOf(seq));
  }
  outboxFile(rowId: string, name: string): Promise<{ name: string; path: string }> {
    return this.forward((p) => p.outboxFile(rowId, name));
  }
  runner(command: 'start' | 'stop'): Promise<void> {
    return this.forward((p) => p.runner(command));
  }
  usageAfter(afterId: number): Promise<TurnUsageRow[]> {
    return this.forward((p) => p.usageAfter(afterId));
  }
  done(ids: string[], incarnation: number): Promise<string[]> {
    return this.forward((p) => p.done(ids, incarnation));
  }
  tasks(): Promise<InboundRow[]> {
    return this.forward((p) => p.tasks());
  }
  changeTask(taskId: string, command: TaskCommand, timezone: string): Promise<InboundRow | null> {
    return this.forward((p) => p.changeTask(taskId, command, timezone));
  }
  inbound(id: string): Promise<InboundRow | undefined> {
    return this.forward((p) => p.inbound(id));
  }
  logTail(lines: number): Promise<string[]> {
    return this.forward((p) => p.logTail(lines));
  }
}
