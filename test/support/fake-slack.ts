import { createHmac } from 'node:crypto';
import http from 'node:http';
import { waitFor } from './wait.js';
import { closeServer, FailureQueue, listenOnLoopback, readBody, replyJson } from './fake-http.js';

/**
 * A fake Slack on 127.0.0.1, written from Slack's public API shape. The Web API: `POST /api/<method>` with a form or
 * JSON body and `Authorization: Bearer xoxb-…`, answered `{ok: true, …}` or `{ok: false, error}` (HTTP 200), a rate
 * limit as HTTP 429 with `Retry-After`. The Events API and interactivity: the fake plays Slack calling the app, signing
 * each request (`x-slack-signature: v0=HMAC-SHA256(secret, "v0:<timestamp>:<body>")`).
 */
export interface SlackCall {
  method: string;
  body: Record<string, unknown>;
  at: number;
  status: number;
  result?: Record<string, unknown>;
}

export interface FakeSlack {
  /** the Web API base URL (SLACK_API_URL). */
  apiUrl: string;
  botToken: string;
  signingSecret: string;
  botUserId: string;
  calls: SlackCall[];
  /** the next `count` calls of `method` ('*': any) fail: 429 with Retry-After seconds, or an HTTP 5xx. */
  fail(method: string, count: number, status: number, retryAfterS?: number): void;
  /** an Events API request for a user's message, signed (or signed with `secret` to forge one). */
  messageEvent(message: { channel: string; user: string; text: string; ts?: string; mention?: boolean; eventId?: string }): {
    body: string;
    headers: Record<string, string>;
    ts: string;
  };
  /** a block_actions interactivity request pressing a button of a message the bot posted. */
  pressButton(posted: SlackCall, buttonIndex: number, user: string): { body: string; headers: Record<string, string> };
  /** sign a body as Slack would (a wrong `secret` forges a bad signature). */
  sign(body: string, secret?: string): Record<string, string>;
  posted(): SlackCall[];
  waitForPost(what: string, predicate: (call: SlackCall) => boolean, timeoutMs?: number): Promise<SlackCall>;
  close(): Promise<void>;
}

export async function startFakeSlack(): Promise<FakeSlack> {
  const botToken = 'xoxb-test-token';
  const signingSecret = 'slack-signing-secret';
  const calls: SlackCall[] = [];
  const failures = new FailureQueue();
  let clock = 1_700_000_000;
  const nextTs = (): string => `${clock++}.000100`;

  const methods: Record<string, (body: Record<string, unknown>) => Record<string, unknown>> = {
    'auth.test': () => ({ url: 'https://test.slack.com/', team: 'Test', user: 'pincer', team_id: 'T1', user_id: 'UBOT', bot_id: 'BBOT' }),
    'users.info': (body) => ({
      user: {
        id: body.user,
        name: `user-${String(body.user)}`,
        real_name: `User ${String(body.user)}`,
        profile: { display_name: `user-${String(body.user)}`, real_name: `User ${String(body.user)}` },
      },
    }),
    'conversations.info': (body) => ({ channel: { id: body.channel, name: 'general', is_im: String(body.channel).startsWith('D') } }),
    'chat.postMessage': (body) => {
      const ts = nextTs();
      return {
        channel: body.channel,
        ts,
        message: {
          type: 'message',
          user: 'UBOT',
          bot_id: 'BBOT',
          ts,
          text: body.text ?? body.markdown_text,
          ...(body.thread_ts ? { thread_ts: body.thread_ts } : {}),
        },
      };
    },
    'chat.update': (body) => ({ channel: body.channel, ts: body.ts, text: body.text ?? body.markdown_text }),
    'reactions.add': () => ({}),
    'assistant.threads.setStatus': () => ({}),
  };

  const server = http.createServer((req, res) => {
    void handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) replyJson(res, 500, { ok: false, error: String(err) });
    });
  });

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const method = /^\/api\/([A-Za-z.]+)$/.exec(url.pathname)?.[1] ?? '';
    const raw = await readBody(req);
    const body = parseBody(req.headers['content-type'] ?? '', raw);
    const record = (status: number, result?: Record<string, unknown>): void => void calls.push({ method, body, at: Date.now(), status, result });
    const token = (req.headers.authorization ?? '').replace(/^Bearer /, '') || String(body.token ?? '');
    if (token !== botToken) {
      record(200);
      return replyJson(res, 200, { ok: false, error: 'invalid_auth' });
    }
    const failure = failures.take(method);
    if (failure) {
      record(failure.status);
      if (failure.status === 429) {
        res.writeHead(429, { 'Content-Type': 'application/json', 'Retry-After': String(failure.retryAfterS) });
        res.end(JSON.stringify({ ok: false, error: 'ratelimited' }));
        return;
      }
      return replyJson(res, failure.status, { ok: false, error: 'internal_error' });
    }
    const impl = methods[method];
    if (!impl) {
      record(200);
      return replyJson(res, 200, { ok: false, error: 'unknown_method' });
    }
    const result = { ok: true, ...impl(body) };
    record(200, result);
    replyJson(res, 200, result);
  }

  const sign = (body: string, secret = signingSecret): Record<string, string> => {
    const timestamp = String(Math.floor(Date.now() / 1000));
    const signature = `v0=${createHmac('sha256', secret).update(`v0:${timestamp}:${body}`).digest('hex')}`;
    return { 'x-slack-request-timestamp': timestamp, 'x-slack-signature': signature };
  };

  const fake: FakeSlack = {
    apiUrl: '',
    botToken,
    signingSecret,
    botUserId: 'UBOT',
    calls,
    fail(method, count, status, retryAfterS) {
      failures.add(count, status, retryAfterS, method);
    },
    messageEvent(message) {
      const ts = message.ts ?? nextTs();
      const text = message.mention ? `<@UBOT> ${message.text}` : message.text;
      const event = {
        type: message.mention ? 'app_mention' : 'message',
        channel: message.channel,
        channel_type: message.channel.startsWith('D') ? 'im' : 'channel',
        user: message.user,
        text,
        ts,
        event_ts: ts,
        team: 'T1',
      };
      const body = JSON.stringify({
        token: 'legacy',
        team_id: 'T1',
        api_app_id: 'A1',
        type: 'event_callback',
        event_id: message.eventId ?? `Ev${ts.replace('.', '')}`,
        event_time: Math.floor(Date.now() / 1000),
        event,
      });
      return { body, headers: { 'content-type': 'application/json', ...sign(body) }, ts };
    },
    pressButton(posted, buttonIndex, user) {
      const blocks = (typeof posted.body.blocks === 'string' ? JSON.parse(posted.body.blocks) : posted.body.blocks) as {
        type: string;
        elements?: { type: string; action_id: string; value?: string; text: { text: string } }[];
      }[];
      const button = blocks.flatMap((b) => (b.type === 'actions' ? (b.elements ?? []) : [])).filter((e) => e.type === 'button')[buttonIndex];
      if (!button) throw new Error(`no button ${buttonIndex}`);
      const ts = String(posted.result?.ts);
      const payload = {
        type: 'block_actions',
        team: { id: 'T1' },
        user: { id: user, username: `user-${user}`, name: `user-${user}` },
        api_app_id: 'A1',
        container: { type: 'message', message_ts: ts, channel_id: posted.body.channel, is_ephemeral: false },
        trigger_id: 'trigger-1',
        channel: { id: posted.body.channel, name: 'general' },
        message: { type: 'message', ts, ...(posted.body.thread_ts ? { thread_ts: posted.body.thread_ts } : {}), text: posted.body.text },
        actions: [
          {
            type: 'button',
            action_id: button.action_id,
            block_id: 'b1',
            value: button.value,
            text: { type: 'plain_text', text: button.text.text },
            action_ts: String(Date.now() / 1000),
          },
        ],
      };
      const body = new URLSearchParams({ payload: JSON.stringify(payload) }).toString();
      return { body, headers: { 'content-type': 'application/x-www-form-urlencoded', ...sign(body) } };
    },
    sign,
    posted: () => calls.filter((c) => c.method === 'chat.postMessage' && c.status === 200 && c.result?.ok === true),
    waitForPost: (what, predicate, timeoutMs = 20_000) => waitFor(what, () => fake.posted().find(predicate), { timeoutMs, intervalMs: 10 }),
    async close() {
      await closeServer(server);
    },
  };

  fake.apiUrl = `${await listenOnLoopback(server)}/api/`;
  return fake;
}

/** The Web API client sends forms (objects as JSON strings) or JSON. */
function parseBody(contentType: string, raw: Buffer): Record<string, unknown> {
  const text = raw.toString('utf8');
  if (text === '') return {};
  if (contentType.includes('application/json')) return JSON.parse(text) as Record<string, unknown>;
  return Object.fromEntries(new URLSearchParams(text));
}
