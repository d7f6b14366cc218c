import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { CLI_ENTRY } from '../src/shared/cli-entry.js';
import { startFakeTelegram } from '../test/support/fake-telegram.js';
import { waitFor } from '../test/support/wait.js';

/**
 * A chat platform's round trip: a Telegram user's message in (the fake Bot API answers the host's long poll) → the
 * agent's answer out (the fake receives `sendMessage`), through a real `pincer host` with its runner (mock
 * provider), on loopback. The baseline, in the same host, is the HTTP channel's round trip (POST a message → its
 * answer on the SSE stream): the difference is what the Chat SDK path adds. Sequential messages to one chat whose
 * runner is already up (the first message, which starts it, is not counted). Telegram polling has no deliberate
 * delay of its own (the update answers the waiting long poll at once).
 */
export interface PlatformSamples {
  telegram: number[];
  http: number[];
}

export const TOKEN = 'bench-token-0123456789abcdef';

export async function measurePlatformRoundTrip(messages: number): Promise<PlatformSamples> {
  const telegram = await startFakeTelegram();
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-bench-platform-'));
  const child = spawn(process.execPath, [CLI_ENTRY, 'host', '--http', '0'], {
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      AGENT_PROVIDER: 'mock',
      TZ: 'UTC',
      PINCER_HOME: home,
      PINCER_HTTP_TOKEN: TOKEN,
      TELEGRAM_BOT_TOKEN: telegram.token,
      TELEGRAM_API_BASE_URL: telegram.url,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const result: PlatformSamples = { telegram: [], http: [] };
  const events: string[] = [];
  let stream: http.ClientRequest | undefined;
  try {
    const port = await waitFor('host listening', () => Number(/http channel listening on http:\/\/[^:]+:(\d+)/.exec(stderr)?.[1] ?? 0), { timeoutMs: 30_000 });
    await waitFor('telegram connected', () => /telegram: connected/.test(stderr), { timeoutMs: 30_000 });
    stream = openStream(port, 'bench', events);
    const telegramOnce = async (i: number): Promise<number> => {
      const text = `tgbench${i < 0 ? 'warm' : i}x`;
      const started = performance.now();
      telegram.userSends({ chatId: 900, userId: 900, text });
      await telegram.waitForSent(`answer ${i}`, (c) => String(c.body.text ?? '').includes(text), 30_000);
      return performance.now() - started;
    };
    const httpOnce = async (i: number): Promise<number> => {
      const text = `httpbench${i < 0 ? 'warm' : i}x`;
      const started = performance.now();
      await post(port, '/v1/conversations/bench/messages', { text, sender: 'bench' });
      await waitFor(`http answer ${i}`, () => events.some((e) => e.includes(text)), { timeoutMs: 30_000, intervalMs: 1 });
      return performance.now() - started;
    };
    await telegramOnce(-1);
    await httpOnce(-1);
    // Taking turns, so both see the same machine.
    for (let i = 0; i < messages; i++) {
      result.telegram.push(await telegramOnce(i));
      result.http.push(await httpOnce(i));
    }
  } finally {
    stream?.destroy();
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
    await telegram.close();
    fs.rmSync(home, { recursive: true, force: true });
  }
  return result;
}

export function post(port: number, urlPath: string, body: unknown): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, method: 'POST', path: urlPath, headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${TOKEN}` } },
      (res) => {
        res.resume();
        res.on('end', () => (res.statusCode === 202 ? resolve() : reject(new Error(`POST ${urlPath}: ${res.statusCode}`))));
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

/** The conversation's SSE stream; each event's data line is appended to `events`. */
export function openStream(port: number, conversation: string, events: string[]): http.ClientRequest {
  const req = http.get({
    host: '127.0.0.1',
    port,
    path: `/v1/conversations/${conversation}/stream`,
    headers: { Authorization: `Bearer ${TOKEN}`, Accept: 'text/event-stream' },
  });
  req.on('response', (res) => res.setEncoding('utf8').on('data', (chunk: string) => events.push(chunk)));
  req.on('error', () => undefined);
  return req;
}
