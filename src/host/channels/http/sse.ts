import type { HttpMailbox, MailboxEvent } from './mailbox.js';

/**
 * The SSE streams of the HTTP channel, by conversation. A stream first replays the mailbox after the client's last
 * event id, then receives what is delivered; typing events go only to open streams (they are not kept), and a
 * keepalive comment goes to every stream so proxies do not close idle ones.
 */

const KEEPALIVE_MS = 15_000;
const encoder = new TextEncoder();

interface SseClient {
  write(text: string): void;
  close(): void;
}

export class SseHub {
  private readonly streams = new Map<string, Set<SseClient>>();
  private keepalive: NodeJS.Timeout | null = null;

  constructor(private readonly mailbox: HttpMailbox) {}

  start(): void {
    this.keepalive = setInterval(() => this.broadcastComment('keepalive'), KEEPALIVE_MS);
    this.keepalive.unref();
  }

  /** The streaming response of one client: replay after `after`, then live events until the client goes away. */
  open(conversation: string, after: number): Response {
    let client: SseClient | null = null;
    const body = new ReadableStream<Uint8Array>({
      start: (controller) => {
        let open = true;
        client = {
          write: (text) => {
            if (open) controller.enqueue(encoder.encode(text));
          },
          close: () => {
            if (!open) return;
            open = false;
            controller.close();
          },
        };
        client.write(': connected\n\n');
        // Replay first, then subscribe: delivery runs on this same thread, so nothing lands in between.
        for (const event of this.mailbox.after(conversation, after)) client.write(formatEvent(event));
        let set = this.streams.get(conversation);
        if (!set) this.streams.set(conversation, (set = new Set()));
        set.add(client);
      },
      cancel: () => {
        if (client) this.streams.get(conversation)?.delete(client);
      },
    });
    return new Response(body, { status: 200, headers: { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache', Connection: 'keep-alive' } });
  }

  /** A stored event to the conversation's open streams. */
  publish(event: MailboxEvent): void {
    for (const client of this.streams.get(event.conversation) ?? []) client.write(formatEvent(event));
  }

  /** An event that is not kept (typing) to the conversation's open streams. */
  publishTransient(conversation: string, type: string, data: Record<string, unknown>): void {
    for (const client of this.streams.get(conversation) ?? []) client.write(`event: ${type}\ndata: ${JSON.stringify(data)}\n\n`);
  }

  /** End every stream (the channel is stopping). */
  closeAll(): void {
    if (this.keepalive) clearInterval(this.keepalive);
    for (const set of this.streams.values()) for (const client of set) client.close();
    this.streams.clear();
  }

  private broadcastComment(text: string): void {
    for (const set of this.streams.values()) for (const client of set) client.write(`: ${text}\n\n`);
  }
}

function formatEvent(event: MailboxEvent): string {
  const data = event.files.length > 0 ? { ...event.data, fileUrls: event.files.map((_f, i) => `/v1/files/${event.id}/${i}`) } : event.data;
  return `id: ${event.id}\nevent: ${String(event.data.type)}\ndata: ${JSON.stringify(data)}\n\n`;
}
