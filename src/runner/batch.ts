import type { InboundContent } from '../db/content.js';
import type { RoutingContext } from '../db/types.js';
import type { ClaimedMessage } from './queue.js';

/**
 * The messages given to one query, and where its answers go. Each prompt sent (the first and every
 * push) carries the routing of its newest triggering message; answers are routed in the order prompts were sent, the
 * last routing staying in force for any further answers.
 */
export class Batch {
  readonly ids: string[] = [];
  private readonly routings: RoutingContext[] = [];
  /** the message ids of each prompt not answered yet, beside its routing. */
  private readonly prompts: string[][] = [];

  constructor(messages: ClaimedMessage[]) {
    this.add(messages);
  }

  /** Add the messages of one prompt (the first, or a push). */
  add(messages: ClaimedMessage[]): void {
    for (const { row } of messages) this.ids.push(row.id);
    const trigger = [...messages].reverse().find(({ row }) => row.trigger === 1) ?? messages[messages.length - 1];
    if (!trigger) return;
    const { row } = trigger;
    this.prompts.push(messages.map((m) => m.row.id));
    this.routings.push({
      platformId: row.platform_id,
      channelType: row.channel_type,
      threadId: row.thread_id,
      inReplyTo: row.id,
    });
  }

  /** Routing for the next answer. */
  get routing(): RoutingContext {
    return this.routings[0]!;
  }

  /**
   * The messages of the prompt the next answer belongs to: an answer completes them, so a kill later in the query
   * (before the answers to later pushes) does not make them run again.
   */
  get answering(): string[] {
    return this.prompts[0] ?? [];
  }

  /** An answer was written: later answers belong to the next prompt, if one was pushed. True when the routing moved on. */
  answered(): boolean {
    if (this.routings.length <= 1) return false;
    this.routings.shift();
    this.prompts.shift();
    return true;
  }
}

/** `chat×2, task×1` for log lines. */
export function describeKinds(messages: ClaimedMessage[]): string {
  const counts = new Map<string, number>();
  for (const { message } of messages) counts.set(message.kind, (counts.get(message.kind) ?? 0) + 1);
  return [...counts].map(([kind, count]) => `${kind}×${count}`).join(', ');
}

/** The words a conversation is named after: the first message's text, prompt, or event. */
export function summarySourceOf(message: InboundContent | undefined): string {
  if (!message) return 'conversation';
  switch (message.kind) {
    case 'chat':
    case 'chat-sdk':
      return message.content.text;
    case 'task':
      return message.content.prompt;
    case 'webhook':
      return `${message.content.source} ${message.content.event}`;
    case 'system':
      return String('action' in message.content ? message.content.action : message.content.type);
  }
}
