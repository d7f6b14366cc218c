import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { AttachmentSchema, describeIssues } from '../../db/content.js';
import { errorMessage, type Logger } from '../../shared/log.js';
import { HostError, isHostError } from '../errors.js';
import type { ConversationRef } from '../types.js';
import type { PlatformWebhooks } from '../platforms/webhooks.js';
import type { HttpMailbox, MailboxEvent } from './http-mailbox.js';
import type { ChannelAdapter, DeliveryReceipt, HostApi, OutboundDelivery } from './types.js';

/**
 * The HTTP channel: a JSON API on loopback (by default) with a bearer token. A conversation is any id a client picks
 * (`/v1/conversations/{id}/…`); what the agent sends to it is stored in the mailbox and streamed over SSE.
 * README "HTTP API" lists the routes with curl examples.
 */
export interface HttpChannelOptions {
  port: number;
  host: string;
  token: string;
  mailbox: HttpMailbox;
  log: Logger;
  /** chat platform webhooks (`/webhooks/<platform>`), answered before the bearer-token check: each is signed. */
  webhooks?: PlatformWebhooks;
}

const MAX_BODY_BYTES = 1024 * 1024;
const KEEPALIVE_MS = 15_000;
const CONVERSATION_ID = /^[A-Za-z0-9._:@-]{1,128}$/;

const PostMessage = z.object({
  text: z.string().min(1),
  sender: z.string().min(1).default('http'),
  senderId: z.string().min(1).optional(),
  threadId: z.string().min(1).optional(),
  attachments: z.array(AttachmentSchema).optional(),
  replyTo: z.object({ id: z.string(), sender: z.string(), text: z.string() }).optional(),
});
const PostAnswer = z.object({ questionId: z.string().min(1), selectedOption: z.string(), userId: z.string().optional(), threadId: z.string().optional() });
const PostTask = z.object({
  prompt: z.string().min(1),
  processAfter: z.string().optional(),
  recurrence: z.string().optional(),
  script: z.string().optional(),
  threadId: z.string().min(1).optional(),
});

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly field?: string,
  ) {
    super(message);
  }
}

export class HttpChannel implements ChannelAdapter {
  readonly type = 'http';
  private server: http.Server | null = null;
  private host: HostApi | null = null;
  private readonly streams = new Map<string, Set<http.ServerResponse>>();
  private keepalive: NodeJS.Timeout | null = null;

  constructor(private readonly options: HttpChannelOptions) {}

  async start(host: HostApi): Promise<void> {
    this.host = host;
    const server = http.createServer((req, res) => {
      this.handle(req, res).catch((err: unknown) => this.fail(res, err));
    });
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', (err) => reject(new HostError('config', `http channel cannot listen on ${this.options.host}:${this.options.port}: ${err.message}`)));
      server.listen(this.options.port, this.options.host, () => resolve());
    });
    this.keepalive = setInterval(() => this.broadcastComment('keepalive'), KEEPALIVE_MS);
    this.keepalive.unref();
    this.options.log.info(`http channel listening on http://${this.options.host}:${this.port()}`);
  }

  /** The port actually bound (useful with --http 0). */
  port(): number {
    return (this.server?.address() as AddressInfo | null)?.port ?? this.options.port;
  }

  async deliver(message: OutboundDelivery): Promise<DeliveryReceipt> {
    const { payload, conversation } = message;
    const files = payload.type === 'chat' ? payload.files.map((f) => f.path) : [];
    const data: Record<string, unknown> = {
      ...(payload.type === 'chat' ? { type: 'chat', text: payload.text, files: payload.files.map((f) => f.name) } : payload),
      sessionId: message.sessionId,
      seq: message.seq,
      threadId: conversation.threadId,
      inReplyTo: message.inReplyTo,
    };
    const event = this.options.mailbox.append(conversation.platformId, data, files);
    for (const res of this.streams.get(conversation.platformId) ?? []) writeEvent(res, event);
    return { platformMessageId: `http-${event.id}` };
  }

  /** An ephemeral `typing` event to the conversation's open streams (not kept in the mailbox). */
  async setTyping(conversation: ConversationRef, active: boolean): Promise<void> {
    const data = JSON.stringify({ type: 'typing', active, threadId: conversation.threadId });
    for (const res of this.streams.get(conversation.platformId) ?? []) res.write(`event: typing\ndata: ${data}\n\n`);
  }

  async stop(): Promise<void> {
    if (this.keepalive) clearInterval(this.keepalive);
    for (const set of this.streams.values()) for (const res of set) res.end();
    this.streams.clear();
    const server = this.server;
    this.server = null;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const parts = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
    if (req.method === 'GET' && url.pathname === '/v1/health') return json(res, 200, { ok: true });
    if (this.options.webhooks?.matches(req)) return this.options.webhooks.handle(req, res);
    if (!this.authorised(req)) {
      res.setHeader('WWW-Authenticate', 'Bearer');
      return json(res, 401, { error: 'missing or wrong bearer token (Authorization: Bearer <token>)' });
    }
    const host = this.host!;
    const [v1, resource, id, sub] = parts;
    if (v1 !== 'v1') throw new HttpError(404, `no route ${req.method} ${url.pathname}`);
    if (resource === 'conversations' && id !== undefined && parts.length === 4) {
      if (!CONVERSATION_ID.test(id)) throw new HttpError(400, `conversation id "${id}": use 1–128 of A-Z a-z 0-9 . _ : @ -`, 'conversation');
      const conversation = (threadId?: string): ConversationRef => ({ channelType: 'http', platformId: id, threadId: threadId ?? null });
      if (req.method === 'POST' && sub === 'messages') {
        const body = validate(PostMessage, await readJson(req));
        const { threadId, ...content } = body;
        return json(res, 202, host.acceptInbound({ conversation: conversation(threadId), kind: 'chat', content }));
      }
      if (req.method === 'POST' && sub === 'answers') {
        const body = validate(PostAnswer, await readJson(req));
        return json(res, 202, host.answerQuestion(conversation(body.threadId), body));
      }
      if (req.method === 'POST' && sub === 'tasks') {
        const { threadId, ...task } = validate(PostTask, await readJson(req));
        return json(res, 202, host.scheduleTask(conversation(threadId), task));
      }
      if (req.method === 'GET' && sub === 'events') {
        const events = this.options.mailbox.after(id, afterParam(url.searchParams.get('after')));
        return json(res, 200, { events: events.map((e) => e.data) });
      }
      if (req.method === 'GET' && sub === 'stream') return this.stream(req, res, id, url);
    }
    if (req.method === 'POST' && resource === 'webhooks' && id !== undefined && parts.length === 3) {
      const conversationId = url.searchParams.get('conversation') ?? `webhook-${id}`;
      if (!CONVERSATION_ID.test(conversationId)) throw new HttpError(400, `conversation id "${conversationId}" is not valid`, 'conversation');
      const event = url.searchParams.get('event') ?? header(req, 'x-pincer-event') ?? header(req, 'x-github-event');
      if (!event) throw new HttpError(400, 'webhook event missing: pass ?event=NAME or an X-Pincer-Event header', 'event');
      const payload = await readJson(req);
      const receipt = host.acceptInbound({
        conversation: { channelType: 'http', platformId: conversationId, threadId: null },
        kind: 'webhook',
        content: { source: id, event, payload },
      });
      return json(res, 202, receipt);
    }
    if (req.method === 'GET' && resource === 'sessions' && parts.length === 2) return json(res, 200, { sessions: host.listSessions() });
    if (req.method === 'GET' && resource === 'files' && id !== undefined && sub !== undefined && parts.length === 4) return this.file(res, id, sub);
    throw new HttpError(404, `no route ${req.method} ${url.pathname}`);
  }

  private stream(req: http.IncomingMessage, res: http.ServerResponse, conversation: string, url: URL): void {
    const after = afterParam(header(req, 'last-event-id') ?? url.searchParams.get('after'));
    res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache', Connection: 'keep-alive' });
    res.write(': connected\n\n');
    // Replay first, then subscribe: delivery runs on this same thread, so nothing lands in between.
    for (const event of this.options.mailbox.after(conversation, after)) writeEvent(res, event);
    let set = this.streams.get(conversation);
    if (!set) this.streams.set(conversation, (set = new Set()));
    set.add(res);
    req.on('close', () => set.delete(res));
  }

  private file(res: http.ServerResponse, eventId: string, index: string): void {
    const event = this.options.mailbox.get(Number(eventId));
    const file = event?.files[Number(index)];
    if (!file || !fs.existsSync(file)) throw new HttpError(404, `no file ${eventId}/${index}`);
    res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Disposition': `attachment; filename="${path.basename(file).replace(/"/g, '')}"` });
    fs.createReadStream(file).pipe(res);
  }

  private authorised(req: http.IncomingMessage): boolean {
    const given = /^Bearer (.+)$/.exec(header(req, 'authorization') ?? '')?.[1] ?? '';
    const a = Buffer.from(given);
    const b = Buffer.from(this.options.token);
    return a.length === b.length && timingSafeEqual(a, b);
  }

  private broadcastComment(text: string): void {
    for (const set of this.streams.values()) for (const res of set) res.write(`: ${text}\n\n`);
  }

  private fail(res: http.ServerResponse, err: unknown): void {
    if (res.headersSent) {
      res.end();
      return;
    }
    if (err instanceof HttpError) return json(res, err.status, { error: err.message, ...(err.field ? { field: err.field } : {}) });
    if (isHostError(err)) {
      const status = err.code === 'invalid-input' ? 400 : err.code === 'unknown-conversation' || err.code === 'not-found' || err.code === 'unknown-group' ? 404 : 500;
      return json(res, status, { error: err.message, code: err.code, ...(err.field ? { field: err.field } : {}) });
    }
    this.options.log.error(`http: ${errorMessage(err)}`);
    json(res, 500, { error: 'internal error' });
  }
}

function writeEvent(res: http.ServerResponse, event: MailboxEvent): void {
  const data = event.files.length > 0 ? { ...event.data, fileUrls: event.files.map((_f, i) => `/v1/files/${event.id}/${i}`) } : event.data;
  res.write(`id: ${event.id}\nevent: ${String(event.data.type)}\ndata: ${JSON.stringify(data)}\n\n`);
}

function json(res: http.ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify(body));
}

function header(req: http.IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function afterParam(value: string | null | undefined): number {
  const n = Number(value ?? 0);
  return Number.isInteger(n) && n >= 0 ? n : 0;
}

async function readJson(req: http.IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new HttpError(413, `body larger than ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk as Buffer);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') throw new HttpError(400, 'empty body: send a JSON object');
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new HttpError(400, `invalid JSON body: ${errorMessage(err)}`);
  }
}

function validate<T>(schema: z.ZodType<T>, body: unknown): T {
  const parsed = schema.safeParse(body);
  if (!parsed.success) {
    const field = parsed.error.issues[0]?.path.join('.') || undefined;
    throw new HttpError(400, `invalid body: ${describeIssues(parsed.error)}`, field);
  }
  return parsed.data;
}

