import http from 'node:http';
import { waitFor } from './wait.js';
import { closeServer, FailureQueue, listenOnLoopback, readBody, replyJson } from './fake-http.js';

/**
 * A fake Telegram Bot API on 127.0.0.1, written from the Bot API's public shape: `POST /bot<token>/<method>` with a
 * JSON or multipart body, answered `{ok: true, result}` or `{ok: false, error_code, description, parameters?}` with
 * that HTTP status; `getUpdates` long-polls (held until an update arrives or `timeout` seconds pass); files are
 * served at `/file/bot<token>/<file_path>`. A wrong token gets 401 and an unknown method 404, as Telegram answers.
 * Tests play the users (`userSends`, `pressButton`), read what the bot sent (`calls`), and inject failures (`fail`).
 */
export interface TelegramCall {
  method: string;
  body: Record<string, unknown>;
  at: number;
  status: number;
  /** what the fake answered (a sent message has its `message_id` here). */
  result?: unknown;
}

export interface FakeTelegram {
  url: string;
  token: string;
  bot: { id: number; username: string };
  calls: TelegramCall[];
  /** a user writes to the bot; returns the update id and message id. */
  userSends(message: {
    chatId: number;
    text: string;
    userId?: number;
    firstName?: string;
    chatType?: 'private' | 'group';
    entities?: unknown[];
    document?: { name: string; data: Buffer; mimeType?: string };
  }): { updateId: number; messageId: number };
  /** the same update again with a new update id (Telegram delivering a message twice). */
  redeliver(updateId: number): void;
  /** a user presses an inline button of a message the bot sent. */
  pressButton(sent: TelegramCall, buttonIndex: number, user?: { id: number; firstName: string }): void;
  /** the next `count` calls of `method` ('*': any method) fail with `status` (429 carries retry_after seconds). */
  fail(method: string, count: number, status: number, retryAfterS?: number): void;
  /** the next file download waits: `requested` resolves once it was asked for, `release()` lets it answer. */
  holdNextFile(): { requested: Promise<void>; release(): void };
  /** getWebhookInfo reports this URL (auto mode then uses the webhook instead of polling). */
  webhookUrl: string;
  /** messages the bot sent (sendMessage, sendDocument; successful calls only). */
  sent(): TelegramCall[];
  waitForSent(what: string, predicate: (call: TelegramCall) => boolean, timeoutMs?: number): Promise<TelegramCall>;
  close(): Promise<void>;
}

export async function startFakeTelegram(token = '123456:TEST-token'): Promise<FakeTelegram> {
  const bot = { id: 123456, username: 'pincer_test_bot' };
  const updates: { update_id: number; [k: string]: unknown }[] = [];
  const waiters = new Set<() => void>();
  const files = new Map<string, { data: Buffer; size: number }>();
  const failures = new FailureQueue();
  const calls: TelegramCall[] = [];
  let held: { requested: () => void; released: Promise<void> } | undefined;
  let nextUpdateId = 1000;
  let nextMessageId = 1;
  const now = (): number => Math.floor(Date.now() / 1000);

  const push = (update: Record<string, unknown>): number => {
    const id = nextUpdateId++;
    updates.push({ ...update, update_id: id });
    for (const wake of waiters) wake();
    return id;
  };

  const botMessage = (chatId: number, extra: Record<string, unknown>): Record<string, unknown> => ({
    message_id: nextMessageId++,
    date: now(),
    chat: { id: chatId, type: chatId < 0 ? 'group' : 'private', ...(chatId < 0 ? { title: 'Test group' } : { first_name: 'Ada' }) },
    from: { id: bot.id, is_bot: true, first_name: 'Pincer', username: bot.username },
    ...extra,
  });

  const methods: Record<string, (body: Record<string, unknown>) => unknown> = {
    getMe: () => ({ id: bot.id, is_bot: true, first_name: 'Pincer', username: bot.username }),
    getWebhookInfo: () => ({ url: fake.webhookUrl, has_custom_certificate: false, pending_update_count: 0 }),
    deleteWebhook: () => true,
    setWebhook: () => true,
    sendChatAction: () => true,
    answerCallbackQuery: () => true,
    setMessageReaction: () => true,
    sendMessage: (body) => botMessage(Number(body.chat_id), { text: body.text, ...(body.reply_markup ? { reply_markup: body.reply_markup } : {}) }),
    editMessageText: (body) => botMessage(Number(body.chat_id), { message_id: Number(body.message_id), text: body.text, edit_date: now() }),
    sendDocument: (body) =>
      botMessage(Number(body.chat_id), {
        document: { file_id: 'doc', file_unique_id: 'doc', file_name: String(body.document_name ?? 'file') },
        caption: body.caption,
      }),
    getFile: (body) => {
      const file = files.get(String(body.file_id));
      if (!file) throw new ApiError(400, 'Bad Request: invalid file_id');
      return { file_id: body.file_id, file_unique_id: body.file_id, file_size: file.size, file_path: `documents/${String(body.file_id)}` };
    },
  };

  const server = http.createServer((req, res) => {
    void handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) replyJson(res, 500, { ok: false, error_code: 500, description: String(err) });
    });
  });

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const file = /^\/file\/bot([^/]+)\/documents\/(.+)$/.exec(url.pathname);
    if (file) {
      const stored = files.get(decodeURIComponent(file[2]!));
      if (file[1] !== token || !stored) return replyJson(res, 404, { ok: false, error_code: 404, description: 'Not Found' });
      const hold = held;
      held = undefined;
      if (hold) {
        hold.requested();
        await hold.released;
      }
      res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': stored.data.length });
      res.end(stored.data);
      return;
    }
    const match = /^\/bot([^/]+)\/([A-Za-z]+)$/.exec(url.pathname);
    const raw = await readBody(req);
    if (!match) return replyJson(res, 404, { ok: false, error_code: 404, description: 'Not Found' });
    const [, given, method] = match as unknown as [string, string, string];
    const body = parseBody(req.headers['content-type'] ?? '', raw);
    const record = (status: number, result?: unknown): void => void calls.push({ method, body, at: Date.now(), status, result });
    if (given !== token) {
      record(401);
      return replyJson(res, 401, { ok: false, error_code: 401, description: 'Unauthorized' });
    }
    const failure = failures.take(method);
    if (failure) {
      record(failure.status);
      return replyJson(res, failure.status, {
        ok: false,
        error_code: failure.status,
        description: failure.status === 429 ? `Too Many Requests: retry after ${failure.retryAfterS}` : 'Internal Server Error',
        ...(failure.status === 429 ? { parameters: { retry_after: failure.retryAfterS } } : {}),
      });
    }
    if (method === 'getUpdates') return getUpdates(body, res, record);
    const impl = methods[method];
    if (!impl) {
      record(404);
      return replyJson(res, 404, { ok: false, error_code: 404, description: 'Not Found' });
    }
    try {
      const result = impl(body);
      record(200, result);
      replyJson(res, 200, { ok: true, result });
    } catch (err) {
      const status = err instanceof ApiError ? err.status : 500;
      record(status);
      replyJson(res, status, { ok: false, error_code: status, description: String((err as Error).message) });
    }
  }

  async function getUpdates(body: Record<string, unknown>, res: http.ServerResponse, record: (status: number) => void): Promise<void> {
    const offset = Number(body.offset ?? 0);
    const limit = Number(body.limit ?? 100);
    const timeoutS = Number(body.timeout ?? 0);
    const pending = (): typeof updates => updates.filter((u) => u.update_id >= offset).slice(0, limit);
    record(200); // recorded on arrival: a long poll is answered only when an update comes or it times out
    if (pending().length === 0 && timeoutS > 0) {
      await new Promise<void>((resolve) => {
        const done = (): void => {
          clearTimeout(timer);
          waiters.delete(done);
          resolve();
        };
        const timer = setTimeout(done, timeoutS * 1000);
        waiters.add(done);
        res.once('close', done);
      });
    }
    if (res.destroyed) return;
    replyJson(res, 200, { ok: true, result: pending() });
  }

  const fake: FakeTelegram = {
    url: '',
    token,
    bot,
    calls,
    webhookUrl: '',
    userSends(message) {
      const messageId = nextMessageId++;
      const userId = message.userId ?? 42;
      const chatType = message.chatType ?? (message.chatId < 0 ? 'group' : 'private');
      let document: Record<string, unknown> | undefined;
      if (message.document) {
        const fileId = `file-${messageId}`;
        files.set(fileId, { data: message.document.data, size: message.document.data.length });
        document = {
          file_id: fileId,
          file_unique_id: fileId,
          file_name: message.document.name,
          mime_type: message.document.mimeType,
          file_size: message.document.data.length,
        };
      }
      const updateId = push({
        message: {
          message_id: messageId,
          date: now(),
          chat:
            chatType === 'private'
              ? { id: message.chatId, type: 'private', first_name: message.firstName ?? 'Ada' }
              : { id: message.chatId, type: 'group', title: 'Test group' },
          from: { id: userId, is_bot: false, first_name: message.firstName ?? 'Ada', username: `user${userId}` },
          ...(document ? { caption: message.text, document } : { text: message.text }),
          ...(message.entities ? { entities: message.entities } : {}),
        },
      });
      return { updateId, messageId };
    },
    redeliver(updateId) {
      const original = updates.find((u) => u.update_id === updateId);
      if (!original) throw new Error(`no update ${updateId}`);
      const { update_id: _id, ...rest } = original;
      push(rest);
    },
    pressButton(sent, buttonIndex, user = { id: 42, firstName: 'Ada' }) {
      const markup = sent.body.reply_markup as { inline_keyboard: { text: string; callback_data: string }[][] } | string | undefined;
      const keyboard = (typeof markup === 'string' ? JSON.parse(markup) : markup) as { inline_keyboard: { text: string; callback_data: string }[][] };
      const button = keyboard.inline_keyboard.flat()[buttonIndex];
      if (!button) throw new Error(`no button ${buttonIndex}`);
      const chatId = Number(sent.body.chat_id);
      push({
        callback_query: {
          id: `cb-${nextUpdateId}`,
          from: { id: user.id, is_bot: false, first_name: user.firstName },
          message: botMessage(chatId, { message_id: (sent.result as { message_id: number }).message_id, text: sent.body.text }),
          chat_instance: 'ci',
          data: button.callback_data,
        },
      });
    },
    holdNextFile() {
      let requested!: () => void;
      let release!: () => void;
      const asked = new Promise<void>((resolve) => (requested = resolve));
      held = { requested, released: new Promise<void>((resolve) => (release = resolve)) };
      return { requested: asked, release };
    },
    fail(method, count, status, retryAfterS) {
      failures.add(count, status, retryAfterS, method);
    },
    sent: () => calls.filter((c) => (c.method === 'sendMessage' || c.method === 'sendDocument') && c.status === 200),
    waitForSent: (what, predicate, timeoutMs = 20_000) => waitFor(what, () => fake.sent().find(predicate), { timeoutMs, intervalMs: 10 }),
    async close() {
      for (const wake of waiters) wake();
      await closeServer(server);
    },
  };

  fake.url = `${await listenOnLoopback(server)}`;
  return fake;
}

class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * JSON, or the text fields of a multipart form (sendDocument), with the file part's name as `document_name`, its
 * size as `document_size` and its bytes (a Buffer) as `document_data`.
 */
function parseBody(contentType: string, raw: Buffer): Record<string, unknown> {
  if (raw.length === 0) return {};
  const boundary = /boundary=(?:"([^"]+)"|([^;]+))/.exec(contentType);
  if (!boundary) return JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
  const fields: Record<string, unknown> = {};
  for (const part of raw.toString('latin1').split(`--${boundary[1] ?? boundary[2]}`)) {
    const [head, ...rest] = part.split('\r\n\r\n');
    const name = /name="([^"]+)"/.exec(head ?? '')?.[1];
    if (!name) continue;
    const value = rest.join('\r\n\r\n').replace(/\r\n$/, '');
    const filename = /filename="([^"]+)"/.exec(head ?? '')?.[1];
    if (filename) {
      fields[`${name}_name`] = filename;
      fields[`${name}_data`] = Buffer.from(value, 'latin1');
      fields[`${name}_size`] = (fields[`${name}_data`] as Buffer).length;
    } else fields[name] = Buffer.from(value, 'latin1').toString('utf8');
  }
  return fields;
}
