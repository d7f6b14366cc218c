import { createAdaptorServer } from '@hono/node-server';
import { Hono } from 'hono';
import type http from 'node:http';
import type { AddressInfo } from 'node:net';
import { PincerError } from '../../../shared/errors.js';
import type { ConversationRef } from '../../types.js';
import { durationMs, type ToolActivity } from '../../../db/tool-activity.js';
import type { ChannelAdapter, DeliveryReceipt, HostApi, OutboundDelivery } from '../types.js';
import { Authenticator } from './auth.js';
import { hostHeaderCheck } from './host-check.js';
import { errorResponse } from './io.js';
import { BUILTIN_ROUTES } from './routes/index.js';
import { SseHub } from './sse.js';
import type { HttpChannelOptions, HttpContext, HttpEnv } from './types.js';

/**
 * The HTTP channel: a JSON API on loopback (by default) for callers with a token (or a browser logged in with one). A conversation is any id a client picks
 * (`/v1/conversations/{id}/…`); what the agent sends to it is stored in the mailbox and streamed over SSE.
 * The routes live in `routes/`, one module per area; docs/http-api.md lists them with curl examples.
 *
 * Served with Hono on Node's http server: routes get a Web `Request` and return a `Response`, which is what the
 * Chat SDK's webhook handlers take and give, and Hono brings cookies and static files for a browser page.
 */
export class HttpChannel implements ChannelAdapter {
  readonly type = 'http';
  readonly capabilities = { localInput: false, attachable: false };
  private server: http.Server | null = null;
  private readonly sse: SseHub;

  constructor(private readonly options: HttpChannelOptions) {
    this.sse = new SseHub(options.mailbox, { maxBufferedBytes: options.sseMaxBufferedBytes, log: options.log });
  }

  async start(host: HostApi): Promise<void> {
    const server = createAdaptorServer({ fetch: this.app(host).fetch }) as http.Server;
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', (err) =>
        reject(new PincerError('config', `http channel cannot listen on ${this.options.host}:${this.options.port}: ${err.message}`)),
      );
      server.listen(this.options.port, this.options.host, () => resolve());
    });
    this.sse.start();
    this.options.log.info(`http channel listening on http://${this.options.host}:${this.port()}`);
  }

  /** The address it serves, with the port actually bound (what the log line and `pincer host status` say). */
  url(): string {
    const host = this.options.host.includes(':') ? `[${this.options.host}]` : this.options.host;
    return `http://${host}:${this.port()}/`;
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
    const event = this.options.mailbox.append(conversation.platformId, data, files, message.id ? `${message.sessionId}:${message.id}` : undefined);
    if (event.fresh) this.sse.publish(event);
    return { platformMessageId: `http-${event.id}` };
  }

  /** An ephemeral `typing` event to the conversation's open streams (not kept in the mailbox). */
  async setTyping(conversation: ConversationRef, active: boolean): Promise<void> {
    this.sse.publishTransient(conversation.platformId, 'typing', { type: 'typing', active, threadId: conversation.threadId });
  }

  /** An ephemeral `tool` event (a tool call started or ended) to the conversation's open streams (not kept). */
  async showToolActivity(conversation: ConversationRef, activity: ToolActivity): Promise<void> {
    const { id, name, preview, status, startedAt, endedAt } = activity;
    this.sse.publishTransient(conversation.platformId, 'tool', {
      type: 'tool',
      id,
      name,
      preview,
      status,
      startedAt,
      endedAt,
      durationMs: durationMs(activity),
      threadId: conversation.threadId,
    });
  }

  async stop(): Promise<void> {
    this.sse.closeAll();
    const server = this.server;
    this.server = null;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Open routes first, then authentication, then every authenticated route; unknown paths are a JSON 404. */
  private app(host: HostApi): Hono<HttpEnv> {
    const { log } = this.options;
    const auth = new Authenticator(this.options.token, this.options.access);
    const context: HttpContext = { host, mailbox: this.options.mailbox, sse: this.sse, access: this.options.access, auth, log };
    const routers = { open: new Hono<HttpEnv>(), api: new Hono<HttpEnv>() };
    for (const module of [...BUILTIN_ROUTES, ...(this.options.routes ?? [])]) module(routers, context);
    const app = new Hono<HttpEnv>();
    app.use('*', hostHeaderCheck(this.options.host, this.options.hostnames ?? []));
    app.route('/', routers.open);
    app.use('*', auth.middleware());
    app.route('/', routers.api);
    app.notFound((c) => c.json({ error: `no route ${c.req.method} ${c.req.path}` }, 404));
    app.onError((err, c) => errorResponse(c, err, log));
    return app;
  }
}
