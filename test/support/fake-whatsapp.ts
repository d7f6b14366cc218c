import { createHmac } from 'node:crypto';
import http from 'node:http';
import { waitFor } from './wait.js';
import { closeServer, FailureQueue, listenOnLoopback, readBody, replyJson } from './fake-http.js';

/**
 * A fake WhatsApp Cloud API on 127.0.0.1, written from Meta's public API shape: the Graph API
 * `POST /<version>/<phone-number-id>/messages` with `Authorization: Bearer <access token>`, answered
 * `{messaging_product, contacts, messages: [{id}]}` or `{error: {message, type, code}}` with an HTTP error status;
 * and webhook notifications as Meta sends them (`{object: 'whatsapp_business_account', entry: [{changes: [{field:
 * 'messages', value}]}]}`), signed `x-hub-signature-256: sha256=HMAC-SHA256(app secret, body)`.
 */
export interface GraphCall {
  path: string;
  body: Record<string, unknown>;
  at: number;
  status: number;
  result?: Record<string, unknown>;
}

export interface FakeWhatsApp {
  /** WHATSAPP_API_URL (the adapter adds the API version). */
  url: string;
  accessToken: string;
  appSecret: string;
  verifyToken: string;
  phoneNumberId: string;
  calls: GraphCall[];
  fail(count: number, status: number): void;
  /** a user's text message as a signed webhook request (or signed with `secret`, to forge one). */
  userSends(
    message: { from: string; text: string; id?: string; name?: string },
    secret?: string,
  ): { body: string; headers: Record<string, string>; id: string };
  /** the user taps a reply button of an interactive message the bot sent. */
  tapButton(sent: GraphCall, buttonIndex: number, from: string): { body: string; headers: Record<string, string> };
  sent(): GraphCall[];
  waitForSent(what: string, predicate: (call: GraphCall) => boolean, timeoutMs?: number): Promise<GraphCall>;
  close(): Promise<void>;
}

export async function startFakeWhatsApp(): Promise<FakeWhatsApp> {
  const accessToken = 'EAAG-test-token';
  const appSecret = 'whatsapp-app-secret';
  const phoneNumberId = '1555000';
  const calls: GraphCall[] = [];
  const failures = new FailureQueue();
  let nextId = 1;

  const server = http.createServer((req, res) => {
    void (async () => {
      const text = (await readBody(req)).toString('utf8');
      const body = (text ? JSON.parse(text) : {}) as Record<string, unknown>;
      const path = new URL(req.url ?? '/', 'http://localhost').pathname;
      const record = (status: number, result?: Record<string, unknown>): void => void calls.push({ path, body, at: Date.now(), status, result });
      const answer = (status: number, value: unknown): void => replyJson(res, status, value);
      if (req.headers.authorization !== `Bearer ${accessToken}`) {
        record(401);
        return answer(401, { error: { message: 'Invalid OAuth access token.', type: 'OAuthException', code: 190 } });
      }
      if (!new RegExp(`^/v[0-9.]+/${phoneNumberId}/messages$`).test(path)) {
        record(404);
        return answer(404, { error: { message: 'Unknown path', type: 'GraphMethodException', code: 100 } });
      }
      const failure = failures.take();
      if (failure) {
        record(failure.status);
        return answer(failure.status, {
          error:
            failure.status === 429
              ? { message: 'Rate limit hit', type: 'OAuthException', code: 130429 }
              : { message: 'An unexpected error has occurred.', type: 'OAuthException', code: 2 },
        });
      }
      const result = { messaging_product: 'whatsapp', contacts: [{ input: body.to, wa_id: body.to }], messages: [{ id: `wamid.out${nextId++}` }] };
      record(200, result);
      answer(200, result);
    })();
  });

  const signed = (payload: unknown, secret = appSecret): { body: string; headers: Record<string, string> } => {
    const body = JSON.stringify(payload);
    return {
      body,
      headers: { 'content-type': 'application/json', 'x-hub-signature-256': `sha256=${createHmac('sha256', secret).update(body).digest('hex')}` },
    };
  };
  const notification = (from: string, name: string, message: Record<string, unknown>): unknown => ({
    object: 'whatsapp_business_account',
    entry: [
      {
        id: 'WABA1',
        changes: [
          {
            field: 'messages',
            value: {
              messaging_product: 'whatsapp',
              metadata: { display_phone_number: '15550000000', phone_number_id: phoneNumberId },
              contacts: [{ profile: { name }, wa_id: from }],
              messages: [{ from, timestamp: String(Math.floor(Date.now() / 1000)), ...message }],
            },
          },
        ],
      },
    ],
  });

  const fake: FakeWhatsApp = {
    url: '',
    accessToken,
    appSecret,
    verifyToken: 'whatsapp-verify-token',
    phoneNumberId,
    calls,
    fail(count, status) {
      failures.add(count, status);
    },
    userSends(message, secret) {
      const id = message.id ?? `wamid.in${nextId++}`;
      return { ...signed(notification(message.from, message.name ?? 'Ada', { id, type: 'text', text: { body: message.text } }), secret), id };
    },
    tapButton(sent, buttonIndex, from) {
      const interactive = sent.body.interactive as { action: { buttons: { reply: { id: string; title: string } }[] } };
      const button = interactive.action.buttons[buttonIndex];
      if (!button) throw new Error(`no button ${buttonIndex}`);
      return signed(
        notification(from, 'Ada', {
          id: `wamid.in${nextId++}`,
          type: 'interactive',
          context: { from: phoneNumberId, id: String((sent.result?.messages as { id: string }[])[0]!.id) },
          interactive: { type: 'button_reply', button_reply: { id: button.reply.id, title: button.reply.title } },
        }),
      );
    },
    sent: () => calls.filter((c) => c.status === 200 && (c.body.type === 'text' || c.body.type === 'interactive')),
    waitForSent: (what, predicate, timeoutMs = 20_000) => waitFor(what, () => fake.sent().find(predicate), { timeoutMs, intervalMs: 10 }),
    async close() {
      await closeServer(server);
    },
  };
  fake.url = `${await listenOnLoopback(server)}`;
  return fake;
}
