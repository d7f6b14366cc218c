import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import http from 'node:http';
import { waitFor } from './wait.js';
import { closeServer, FailureQueue, listenOnLoopback, readBody } from './fake-http.js';

/**
 * A fake Discord on 127.0.0.1, written from Discord's public API shape: REST (`POST /channels/{id}/messages`, `PATCH
 * …/messages/{id}`, `PUT …/reactions/{emoji}/@me`, `POST /channels/{id}/typing`, `POST …/messages/{id}/threads`) with
 * `Authorization: Bot <token>`, a rate limit as 429 with `{retry_after}` and `Retry-After`; interactions (button
 * presses) signed with Ed25519 over `timestamp + body` (`x-signature-ed25519`, `x-signature-timestamp`) by a key pair
 * made here; and gateway MESSAGE_CREATE events as the adapter's gateway listener forwards them
 * (`x-discord-gateway-token: <bot token>`).
 */
export interface DiscordCall {
  method: string;
  path: string;
  body: Record<string, unknown>;
  at: number;
  status: number;
  result?: Record<string, unknown>;
}

export interface FakeDiscord {
  /** DISCORD_API_URL */
  url: string;
  botToken: string;
  applicationId: string;
  /** DISCORD_PUBLIC_KEY (hex of the raw Ed25519 key) */
  publicKey: string;
  calls: DiscordCall[];
  fail(count: number, status: number, retryAfterS?: number): void;
  /** a user's message as the gateway forwarder posts it to the webhook. */
  gatewayMessage(
    m: { channelId: string; userId: string; content: string; guildId?: string; mention?: boolean; id?: string },
    token?: string,
  ): { body: string; headers: Record<string, string> };
  /** a signed button-press interaction on a message the bot posted (`privateKey` to forge with another key). */
  pressButton(posted: DiscordCall, buttonIndex: number, userId: string, forge?: boolean): { body: string; headers: Record<string, string> };
  posted(): DiscordCall[];
  waitForPost(what: string, predicate: (call: DiscordCall) => boolean, timeoutMs?: number): Promise<DiscordCall>;
  close(): Promise<void>;
}

export async function startFakeDiscord(): Promise<FakeDiscord> {
  const botToken = 'discord-bot-token';
  const applicationId = '900000000000000001';
  const keys = generateKeyPairSync('ed25519');
  const publicKey = (keys.publicKey.export({ format: 'der', type: 'spki' }) as Buffer).subarray(-32).toString('hex');
  const calls: DiscordCall[] = [];
  const failures = new FailureQueue();
  let nextId = 1_000_000_000_000_000;
  const snowflake = (): string => String(nextId++);

  const server = http.createServer((req, res) => {
    void (async () => {
      const text = (await readBody(req)).toString('utf8');
      const body = (text && (req.headers['content-type'] ?? '').includes('json') ? JSON.parse(text) : {}) as Record<string, unknown>;
      const path = new URL(req.url ?? '/', 'http://localhost').pathname.replace(/^\/api\/v\d+/, '');
      const method = req.method ?? 'GET';
      const record = (status: number, result?: Record<string, unknown>): void => void calls.push({ method, path, body, at: Date.now(), status, result });
      const answer = (status: number, value?: unknown, headers: Record<string, string> = {}): void => {
        res.writeHead(status, { ...(value === undefined ? {} : { 'Content-Type': 'application/json' }), ...headers });
        res.end(value === undefined ? undefined : JSON.stringify(value));
      };
      if (req.headers.authorization !== `Bot ${botToken}`) {
        record(401);
        return answer(401, { message: '401: Unauthorized', code: 0 });
      }
      const failure = method !== 'GET' && !path.endsWith('/typing') ? failures.take() : undefined;
      if (failure) {
        record(failure.status);
        if (failure.status === 429)
          return answer(
            429,
            { message: 'You are being rate limited.', retry_after: failure.retryAfterS, global: false },
            { 'Retry-After': String(failure.retryAfterS) },
          );
        return answer(failure.status, { message: 'Internal Server Error', code: 0 });
      }
      const message = (channelId: string, id = snowflake()): Record<string, unknown> => ({
        id,
        channel_id: channelId,
        type: 0,
        content: body.content ?? '',
        embeds: body.embeds ?? [],
        components: body.components ?? [],
        author: { id: applicationId, username: 'pincer', bot: true },
        timestamp: new Date().toISOString(),
      });
      let match: RegExpExecArray | null;
      if (method === 'POST' && (match = /^\/channels\/(\d+)\/messages$/.exec(path))) {
        const result = message(match[1]!);
        record(200, result);
        return answer(200, result);
      }
      if (method === 'PATCH' && (match = /^\/channels\/(\d+)\/messages\/(\d+)$/.exec(path))) {
        const result = message(match[1]!, match[2]!);
        record(200, result);
        return answer(200, result);
      }
      if (method === 'POST' && (match = /^\/channels\/(\d+)\/messages\/(\d+)\/threads$/.exec(path))) {
        const result = { id: snowflake(), parent_id: match[1], type: 11, name: body.name };
        record(201, result);
        return answer(201, result);
      }
      if ((method === 'PUT' && /\/reactions\/.+\/@me$/.test(path)) || (method === 'POST' && /^\/channels\/\d+\/typing$/.test(path))) {
        record(204);
        return answer(204);
      }
      if (method === 'GET' && (match = /^\/channels\/(\d+)$/.exec(path))) {
        const result = { id: match[1], type: 0 };
        record(200, result);
        return answer(200, result);
      }
      record(404);
      answer(404, { message: '404: Not Found', code: 0 });
    })();
  });

  const signed = (payload: unknown, key: KeyObject): { body: string; headers: Record<string, string> } => {
    const body = JSON.stringify(payload);
    const timestamp = String(Math.floor(Date.now() / 1000));
    const signature = sign(null, Buffer.from(timestamp + body), key).toString('hex');
    return { body, headers: { 'content-type': 'application/json', 'x-signature-ed25519': signature, 'x-signature-timestamp': timestamp } };
  };

  const fake: FakeDiscord = {
    url: '',
    botToken,
    applicationId,
    publicKey,
    calls,
    fail(count, status, retryAfterS) {
      failures.add(count, status, retryAfterS);
    },
    gatewayMessage(m, token = botToken) {
      const data = {
        id: m.id ?? snowflake(),
        channel_id: m.channelId,
        ...(m.guildId ? { guild_id: m.guildId } : {}),
        author: { id: m.userId, username: `user${m.userId}`, global_name: `User ${m.userId}`, bot: false },
        content: m.mention ? `<@${applicationId}> ${m.content}` : m.content,
        timestamp: new Date().toISOString(),
        mentions: m.mention ? [{ id: applicationId, username: 'pincer' }] : [],
        mention_roles: [],
        attachments: [],
        channel_type: m.guildId ? 0 : 1,
      };
      const body = JSON.stringify({ type: 'GATEWAY_MESSAGE_CREATE', timestamp: Date.now(), data });
      return { body, headers: { 'content-type': 'application/json', 'x-discord-gateway-token': token } };
    },
    pressButton(posted, buttonIndex, userId, forge = false) {
      const rows = (posted.body.components ?? []) as { components?: { type: number; custom_id?: string }[] }[];
      const button = rows.flatMap((r) => r.components ?? []).filter((c) => c.type === 2 && c.custom_id)[buttonIndex];
      if (!button) throw new Error(`no button ${buttonIndex}`);
      const channelId = String(posted.result?.channel_id);
      const interaction = {
        id: snowflake(),
        application_id: applicationId,
        type: 3,
        token: 'interaction-token',
        version: 1,
        channel_id: channelId,
        channel: { id: channelId, type: 1 },
        user: { id: userId, username: `user${userId}`, global_name: `User ${userId}` },
        message: { id: posted.result?.id, channel_id: channelId },
        data: { custom_id: button.custom_id, component_type: 2 },
      };
      return signed(interaction, forge ? generateKeyPairSync('ed25519').privateKey : keys.privateKey);
    },
    posted: () => calls.filter((c) => c.method === 'POST' && c.status === 200 && /^\/channels\/\d+\/messages$/.test(c.path)),
    waitForPost: (what, predicate, timeoutMs = 20_000) => waitFor(what, () => fake.posted().find(predicate), { timeoutMs, intervalMs: 10 }),
    async close() {
      await closeServer(server);
    },
  };
  fake.url = `${await listenOnLoopback(server)}/api/v10`;
  return fake;
}
