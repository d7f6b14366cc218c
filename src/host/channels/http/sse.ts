import type { Logger } from '../../../shared/log.js';
import { SENT, type HttpMailbox, type MailboxEvent } from './mailbox.js';

/**
 * The SSE streams of the HTTP channel, by conversation (docs/http-api.md "Streaming", docs/reliability.md).
 *
 * - Where a stream starts: a client that sends `Last-Event-ID` (or `?after=N`) gets every stored event after it,
 *   replayed page by page as it reads, then live events — no gap. A client without either starts live. An id this
 *   host never issued (the mailbox was reset, or the id is not a number) gets one `reset` event: reload the history
 *   from `GET …/events?after=0`, then go on live.
 * - Slow clients: each stream's unread bytes are counted. One that falls more than `maxBufferedBytes` behind stops
 *   getting live events and is sent one `disconnect` event with the reason; the stream ends once it has read that far
 *   (or is cut after `DRAIN_GRACE_MS` if it reads nothing). It resumes with `Last-Event-ID` like any reconnect.
 * - Typing events go only to open streams (they are not kept); a keepalive comment goes to every stream so proxies
 *   do not close idle ones.
 */
export const DEFAULT_SSE_MAX_BUFFERED_BYTES = 1024 * 1024;
const KEEPALIVE_MS = 15_000;
/** Stored events replayed per read of the client. */
const REPLAY_PAGE = 200;
/** Bytes queued for a stream before it waits for the client to read. */
const QUEUE_HIGH_WATER = 64 * 1024;
/** How long a client that fell behind has to read up to its `disconnect` event before its connection is cut. */
const DRAIN_GRACE_MS = 30_000;
const encoder = new TextEncoder();

/** Where a new stream starts (from `Last-Event-ID` / `?after=`). */
export type StreamStart = { from: 'live' } | { from: 'after'; id: number } | { from: 'invalid'; value: string };

export interface SseOptions {
  /** unread bytes a stream may have before it is disconnected (default 1 MiB). */
  maxBufferedBytes?: number;
  log?: Logger;
}

interface SseClient {
  /** whether it asked for `sent` events (what clients posted) too. */
  withSent: boolean;
  /** queue a live event (ignored while the stream is still replaying, or after it fell behind). */
  live(text: string): void;
  close(): void;
  /** end the stream if its caller's credential was revoked (or its browser session logged out). */
  recheck(): void;
}

/** How often open streams check their caller's credential besides before each event (a revocation in another process). */
const RECHECK_MS = 1000;

export class SseHub {
  private readonly streams = new Map<string, Set<SseClient>>();
  private keepalive: NodeJS.Timeout | null = null;
  private recheck: NodeJS.Timeout | null = null;
  private readonly maxBufferedBytes: number;

  constructor(
    private readonly mailbox: HttpMailbox,
    private readonly options: SseOptions = {},
  ) {
    this.maxBufferedBytes = options.maxBufferedBytes ?? DEFAULT_SSE_MAX_BUFFERED_BYTES;
  }

  start(): void {
    this.keepalive = setInterval(() => this.broadcast(': keepalive\n\n'), KEEPALIVE_MS);
    this.keepalive.unref();
    this.recheck = setInterval(() => {
      for (const set of this.streams.values()) for (const client of [...set]) client.recheck();
    }, RECHECK_MS);
    this.recheck.unref();
  }

  /**
   * The streaming response of one client. `stillAuthorised` (a hash and a token lookup) is asked every second and
   * before each replay page, not before each live event: once it says no, the stream gets a `disconnect` event and
   * ends.
   */
  open(conversation: string, start: StreamStart, stillAuthorised: () => boolean = () => true, withSent = false): Response {
    const set = this.streams.get(conversation) ?? new Set<SseClient>();
    this.streams.set(conversation, set);
    let client: SseClient | null = null;
    /** replay cursor; null once the stream is live. */
    let cursor: number | null = null;
    let behind = false;
    let closed = false;
    let cutTimer: NodeJS.Timeout | undefined;
    /** ends the stream if its caller's credential is gone; true when it did. */
    let revoked = (): boolean => false;
    const detach = (): void => {
      clearTimeout(cutTimer);
      if (client) set.delete(client);
    };
    const body = new ReadableStream<Uint8Array>(
      {
        start: (controller) => {
          const enqueue = (text: string): void => {
            if (!closed) controller.enqueue(encoder.encode(text));
          };
          const finish = (): void => {
            if (closed) return;
            closed = true;
            detach();
            controller.close();
          };
          revoked = (): boolean => {
            if (closed || stillAuthorised()) return false;
            enqueue(formatControl('disconnect', { reason: 'credentials revoked or logged out: this stream has ended' }));
            this.options.log?.info(`sse: a stream of ${conversation} ended: its credentials were revoked or logged out`);
            finish();
            return true;
          };
          client = {
            withSent,
            recheck: () => void revoked(),
            live: (text) => {
              if (cursor !== null || behind || closed) return;
              enqueue(text);
              const unread = QUEUE_HIGH_WATER - (controller.desiredSize ?? 0);
              if (unread <= this.maxBufferedBytes) return;
              // Fallen behind: no more live events; tell it why, end once it has read that far (or cut it).
              behind = true;
              set.delete(client!);
              this.options.log?.warn(`sse: a client of ${conversation} is ${unread} bytes behind; disconnecting it (it can resume with Last-Event-ID)`);
              enqueue(
                formatControl('disconnect', {
                  reason: `client too slow: more than ${this.maxBufferedBytes} bytes unread; reconnect with Last-Event-ID to resume`,
                }),
              );
              cutTimer = setTimeout(() => {
                closed = true;
                detach();
                controller.error(new Error('SSE client did not read'));
              }, DRAIN_GRACE_MS);
              cutTimer.unref();
            },
            close: finish,
          };
          enqueue(': connected\n\n');
          const latest = this.mailbox.latestId();
          if (start.from === 'after' && start.id <= latest) {
            cursor = start.id;
            return;
          }
          if (start.from !== 'live') {
            const why = start.from === 'invalid' ? `"${start.value}" is not an event id` : `event ${start.id} is newer than any this host has`;
            enqueue(
              formatControl('reset', {
                reason: `cannot resume: ${why}; reload the history from /v1/conversations/${conversation}/events?after=0`,
                latestId: latest,
              }),
            );
          }
          set.add(client);
        },
        pull: (controller) => {
          if (behind) {
            // It has read up to the disconnect event: end the stream.
            client?.close();
            return;
          }
          if (cursor === null || closed) return;
          if (revoked()) return;
          const page = this.mailbox.after(conversation, cursor, REPLAY_PAGE, withSent);
          for (const event of page) controller.enqueue(encoder.encode(formatEvent(event)));
          cursor = page.at(-1)?.id ?? cursor;
          // The last page: go live in the same turn, so nothing delivered in between is missed.
          if (page.length < REPLAY_PAGE) {
            cursor = null;
            set.add(client!);
          }
        },
        cancel: () => {
          closed = true;
          detach();
        },
      },
      { highWaterMark: QUEUE_HIGH_WATER, size: (chunk) => chunk.byteLength },
    );
    return new Response(body, { status: 200, headers: { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache', Connection: 'keep-alive' } });
  }

  /** A stored event to the conversation's open streams. */
  publish(event: MailboxEvent): void {
    const text = formatEvent(event);
    const sent = event.data.type === SENT;
    for (const client of [...(this.streams.get(event.conversation) ?? [])]) if (!sent || client.withSent) client.live(text);
  }

  /** An event that is not kept (typing) to the conversation's open streams. */
  publishTransient(conversation: string, type: string, data: Record<string, unknown>): void {
    const text = `event: ${type}\ndata: ${JSON.stringify(data)}\n\n`;
    for (const client of [...(this.streams.get(conversation) ?? [])]) client.live(text);
  }

  /** End every stream (the channel is stopping). */
  closeAll(): void {
    if (this.keepalive) clearInterval(this.keepalive);
    if (this.recheck) clearInterval(this.recheck);
    for (const set of this.streams.values()) for (const client of [...set]) client.close();
    this.streams.clear();
  }

  private broadcast(text: string): void {
    for (const set of this.streams.values()) for (const client of [...set]) client.live(text);
  }
}

/** Parse where a stream starts from `Last-Event-ID` (preferred) or `?after=`. */
export function streamStart(lastEventId: string | undefined, after: string | undefined): StreamStart {
  const value = lastEventId ?? after;
  if (value === undefined || value === '') return { from: 'live' };
  const id = Number(value);
  return Number.isSafeInteger(id) && id >= 0 ? { from: 'after', id } : { from: 'invalid', value: value.slice(0, 40) };
}

function formatEvent(event: MailboxEvent): string {
  const data = event.files.length > 0 ? { ...event.data, fileUrls: event.files.map((_f, i) => `/v1/files/${event.id}/${i}`) } : event.data;
  return `id: ${event.id}\nevent: ${String(event.data.type)}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** A stream-control event (`reset`, `disconnect`): no id, so the client's Last-Event-ID stays where it was. */
function formatControl(type: 'reset' | 'disconnect', data: Record<string, unknown>): string {
  return `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
}
