import type { ChannelAdapter, ChannelCapabilities, DeliveryReceipt, OutboundDelivery } from '../host/channels/types.js';
import type { ConversationRef } from '../host/types.js';

/** A channel that keeps what the host delivers to it, for tests: every delivery and every typing change, in order. */
export class TestChannel implements ChannelAdapter {
  readonly type = 'test';
  readonly capabilities: ChannelCapabilities = { localInput: false, attachable: false };
  readonly delivered: OutboundDelivery[] = [];
  readonly typing: { conversation: ConversationRef; active: boolean }[] = [];
  private waiters: (() => void)[] = [];
  private failures: Error[] = [];

  async start(): Promise<void> {}

  async stop(): Promise<void> {
    this.changed();
  }

  /** The next delivery fails with `error` (a platform that is down, or asks to wait). */
  failNext(error: Error): void {
    this.failures.push(error);
  }

  async deliver(message: OutboundDelivery): Promise<DeliveryReceipt> {
    const failure = this.failures.shift();
    if (failure) throw failure;
    this.delivered.push(message);
    this.changed();
    return { platformMessageId: `test-${this.delivered.length}` };
  }

  async setTyping(conversation: ConversationRef, active: boolean): Promise<void> {
    this.typing.push({ conversation, active });
    this.changed();
  }

  /** The first delivery from `after` on that `match` accepts; rejects with what was delivered once `timeoutMs` passed. */
  async next(match: (delivery: OutboundDelivery) => boolean = () => true, options: { after?: number; timeoutMs?: number } = {}): Promise<OutboundDelivery> {
    const deadline = Date.now() + (options.timeoutMs ?? 20_000);
    for (;;) {
      const found = this.delivered.slice(options.after ?? 0).find(match);
      if (found) return found;
      const left = deadline - Date.now();
      if (left <= 0) {
        const seen = this.delivered.map((d) => JSON.stringify(d.payload)).join('\n  ');
        throw new Error(`no matching delivery within ${options.timeoutMs ?? 20_000} ms; delivered:\n  ${seen || '(nothing)'}`);
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** The texts of the chat messages and notices delivered to `platformId`, in order. */
  texts(platformId?: string): string[] {
    return this.delivered
      .filter((d) => platformId === undefined || d.conversation.platformId === platformId)
      .map((d) => (d.payload.type === 'chat' || d.payload.type === 'notice' ? d.payload.text : `[${d.payload.type}]`));
  }

  private changed(): void {
    for (const wake of this.waiters.splice(0)) wake();
  }
}
