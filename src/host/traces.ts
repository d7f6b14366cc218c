import { errorMessage } from '../shared/log.js';
import type { SpanHandle, Tracing } from '../shared/tracing.js';
import type { InboundEnvelope } from './channels/types.js';
import type { DeliveryObserver } from './session/delivery.js';

/**
 * The host's spans of a message's trace: `pincer.receive` (the trace's root, when a channel hands a message over),
 * `pincer.session.insert` (writing it to the session DB; its traceparent is stored in the row for the runner), and
 * `pincer.deliver` for each answer delivered to the channel (child of the stored context of the message it answers).
 */
export class HostTraces {
  constructor(private readonly tracing: Tracing) {}

  /** Receive `message` and write it with `insert(traceparent)`; both spans end (with the error, if one is thrown). */
  async received<T>(message: InboundEnvelope, insert: (traceparent: string | undefined, receive: SpanHandle) => Promise<T>): Promise<T> {
    if (!this.tracing.enabled) return insert(undefined, this.tracing.start(''));
    const receive = this.tracing.start(`pincer.receive ${message.conversation.channelType}`, {
      kind: 'server',
      attributes: { 'pincer.channel': message.conversation.channelType, 'pincer.message.kind': message.kind },
    });
    const write = this.tracing.start('pincer.session.insert', { parent: receive });
    try {
      const result = await insert(write.traceparent, receive);
      write.end();
      receive.end();
      return result;
    } catch (err) {
      write.end(errorMessage(err));
      receive.end(errorMessage(err));
      throw err;
    }
  }

  /** Delivery spans, for the delivery's observer; `traceOf` finds the stored context of the message a row answers. */
  deliveries(traceOf: (sessionId: string, messageId: string) => string | undefined): DeliveryObserver | undefined {
    if (!this.tracing.enabled) return undefined;
    const span =
      (error?: string) =>
      (handle: Parameters<DeliveryObserver['delivered']>[0], row: Parameters<DeliveryObserver['delivered']>[1]): void => {
        const parent = row.in_reply_to ? traceOf(handle.session.id, row.in_reply_to) : undefined;
        if (!parent) return;
        this.tracing
          .start('pincer.deliver', {
            parent,
            kind: 'producer',
            startTime: Date.parse(row.timestamp) || undefined,
            attributes: { 'pincer.channel': row.channel_type ?? handle.session.channelType, 'pincer.message.kind': row.kind, 'pincer.message.seq': row.seq },
          })
          .end(error);
      };
    return { delivered: span(), failed: (handle, row, error) => span(error)(handle, row) };
  }

  flush(): Promise<void> {
    return this.tracing.flush();
  }

  shutdown(): Promise<void> {
    return this.tracing.shutdown();
  }
}

/** One observer that tells each of `observers` (the absent ones left out). */
export function bothObservers(...observers: (DeliveryObserver | undefined)[]): DeliveryObserver | undefined {
  const present = observers.filter((o): o is DeliveryObserver => o !== undefined);
  if (present.length === 0) return undefined;
  return {
    delivered: (handle, row) => present.forEach((o) => o.delivered(handle, row)),
    failed: (handle, row, error) => present.forEach((o) => o.failed(handle, row, error)),
  };
}
