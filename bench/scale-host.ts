import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { CentralStore, openCentralDb } from '../src/host/central-db/store.js';
import { loadHostConfig } from '../src/host/config.js';
import { prepareHome } from '../src/host/home.js';
import { SessionDirectory } from '../src/host/sessions.js';
import { CLI_ENTRY } from '../src/shared/cli-entry.js';
import { waitFor } from '../test/support/wait.js';

/**
 * A `pincer host --http 0` of the scale group (process runners, mock provider) on a home of its own, and the HTTP
 * client parts the group needs: a POST of a chat message and the wait for its answer on the conversation's stream.
 */
export const TOKEN = 'bench-token-0123456789abcdef';
const quiet = (): void => undefined;

export interface ScaleHost {
  home: string;
  child: ChildProcess;
  port: number;
  /** spawn → `[host] ready`, in ms. */
  startMs: number;
  stop(): Promise<void>;
}

export function scaleEnv(home: string): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    TZ: 'UTC',
    AGENT_PROVIDER: 'mock',
    PINCER_RUNNER: 'process',
    PINCER_HOME: home,
    PINCER_HTTP_TOKEN: TOKEN,
    MOCK_DELAY_MS: '0',
  };
}

/** `sessions` idle sessions made offline by the host's own SessionDirectory, as conversations over HTTP would make them. */
export function provision(home: string, sessions: number): void {
  prepareHome(home);
  const config = loadHostConfig(scaleEnv(home));
  const store = new CentralStore(openCentralDb(path.join(home, 'pincer.db')), home);
  const directory = new SessionDirectory(store, config, { debug: quiet, info: quiet, warn: quiet, error: quiet });
  const group = directory.ensureDefaultGroup();
  if (!group) throw new Error('no default agent group');
  for (let i = 0; i < sessions; i++) directory.sessionFor(group, { channelType: 'http', platformId: `idle-${i}`, threadId: null });
  store.db.close();
}

export function newHome(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-bench-scale-'));
}

export async function startHost(home: string): Promise<ScaleHost> {
  const started = performance.now();
  const child = spawn(process.execPath, [CLI_ENTRY, 'host', '--http', '0'], { env: scaleEnv(home), stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr = (stderr + chunk).slice(-20_000)));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
  };
  try {
    await waitFor('host ready', () => stderr.includes('[host] ready') || child.exitCode !== null, { timeoutMs: 900_000, intervalMs: 5 });
    if (child.exitCode !== null) throw new Error(`pincer host exited ${child.exitCode}: ${stderr.slice(-2000)}`);
    const startMs = performance.now() - started;
    const port = Number(/listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(stderr)![1]);
    return { home, child, port, startMs, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

export function post(port: number, conversation: string, text: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify({ text });
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: `/v1/conversations/${conversation}/messages`,
        headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${TOKEN}` },
        agent: false,
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * Resolves when the conversation's stream carries a `chat` event holding `token`. The stream is read from the start
 * of the conversation (`?after=0`), so an answer that comes before the stream is open is not missed.
 */
export function answerOn(port: number, conversation: string, token: string): { done: Promise<void>; close(): void } {
  let req: http.ClientRequest | undefined;
  const done = new Promise<void>((resolve, reject) => {
    req = http.get(
      { host: '127.0.0.1', port, path: `/v1/conversations/${conversation}/stream?after=0`, headers: { Authorization: `Bearer ${TOKEN}` }, agent: false },
      (res) => {
        let pending = '';
        res.setEncoding('utf8').on('data', (chunk: string) => {
          pending += chunk;
          // one SSE event ends with a blank line
          for (let end = pending.indexOf('\n\n'); end >= 0; end = pending.indexOf('\n\n')) {
            const event = pending.slice(0, end);
            pending = pending.slice(end + 2);
            if (/^event: chat$/m.test(event) && event.includes(token)) resolve();
          }
        });
        res.on('end', () => reject(new Error(`the stream of ${conversation} ended`)));
      },
    );
    req.on('error', reject);
  });
  done.catch(() => undefined); // a stream closed after its answer
  return { done, close: () => req?.destroy() };
}
