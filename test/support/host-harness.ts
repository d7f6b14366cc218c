import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { isAlive } from './processes.js';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { BUILT_CLI } from './runner-harness.js';
import { waitFor } from './wait.js';

/**
 * Starts the real `pincer host --http 0` (compiled CLI) on a temp home with the mock provider, and always stops it:
 * `stopAllHosts()` in afterEach kills whatever a test left and reports it, and `runnerPidsLeft()` proves that no
 * runner child outlived its host.
 */
export const TEST_TOKEN = 'test-token-0123456789abcdef';

export interface HostHandle {
  child: ChildProcess;
  home: string;
  port: number;
  stderr(): string;
  /** pids of every runner this host started (from its log). */
  runnerPids(): number[];
  request(
    method: string,
    urlPath: string,
    body?: unknown,
    options?: { token?: string | null; raw?: string; headers?: Record<string, string> },
  ): Promise<{ status: number; body: Record<string, unknown> }>;
  /** open the SSE stream of a conversation (live, or after `lastEventId`); events collect in `events`. */
  stream(conversation: string, options?: { lastEventId?: string; paused?: boolean }): SseStream;
  /** the session folder of a session id (from the central DB's layout). */
  sessionDir(sessionId: string): string;
  stop(): Promise<number | string>;
  exited: Promise<number | string>;
}

export interface SseEvent {
  id: string | undefined;
  event: string | undefined;
  data: Record<string, unknown>;
}

export interface SseStream {
  events: SseEvent[];
  /** the server ended the stream. */
  ended(): boolean;
  /** start reading a stream opened with `paused` (a client that did not read until now). */
  resume(): void;
  waitFor(what: string, predicate: (event: SseEvent) => boolean, timeoutMs?: number): Promise<SseEvent>;
  close(): void;
}

/** The runner kind of every host a test starts unless it names one: `auto` unless PINCER_TEST_RUNNER says otherwise. */
export const TEST_RUNNER = process.env.PINCER_TEST_RUNNER ?? 'auto';

/**
 * For a test that signals the runner by the pid its `runner_state` row names (SIGKILL, SIGSTOP): that is a host pid
 * only for a plain process — a sandbox's pid namespace renumbers it. The fault suite kills sandboxes in every mode.
 */
export const PID_SIGNALLED_RUNNER = { PINCER_RUNNER: 'process' } as const;

/** For a test of what a plain process runner sees (the host's loopback, its files); the reason is beside each use. */
export const PROCESS_RUNNER = { PINCER_RUNNER: 'process' } as const;

const hosts = new Set<HostHandle>();
const allRunnerPids = new Set<number>();

/** `env` overrides the test defaults; a variable set to `undefined` is left out (e.g. PINCER_HTTP_TOKEN). */
export async function startHost(env: Record<string, string | undefined> = {}, home?: string): Promise<HostHandle> {
  home ??= fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-host-'));
  const child = spawn(process.execPath, [BUILT_CLI, 'host', '--http', '0'], {
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      AGENT_PROVIDER: 'mock',
      TZ: 'UTC',
      // what users run: `auto` (bubblewrap wherever it works, then Docker, then a plain process); a test that needs one
      // kind says so in its own env, and PINCER_TEST_RUNNER runs the whole suite in one mode (.ci/run sets none: CI runs `auto`)
      PINCER_RUNNER: TEST_RUNNER,
      PINCER_HOME: home,
      PINCER_HTTP_TOKEN: TEST_TOKEN,
      PINCER_SWEEP_INTERVAL_MS: '200',
      PINCER_RUNNER_BACKOFF_MS: '100',
      PINCER_STALE_MS: '300',
      PINCER_RETRY_BASE_MS: '50',
      ...env,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
    for (const m of chunk.matchAll(/runner started for \S+: pid (\d+)/g)) allRunnerPids.add(Number(m[1]));
  });
  const exited = new Promise<number | string>((resolve) =>
    child.once('exit', (code, signal) => {
      // (a host that exits before it listens was never registered)
      for (const h of hosts) if (h.child === child) hosts.delete(h);
      resolve(code ?? signal ?? -1);
    }),
  );
  const port = await waitFor('host listening', () => {
    if (child.exitCode !== null) throw new Error(`host exited early (${child.exitCode}): ${stderr}`);
    const m = /http channel listening on http:\/\/[^:]+:(\d+)/.exec(stderr);
    return m ? Number(m[1]) : undefined;
  });
  const handle: HostHandle = {
    child,
    home,
    port,
    exited,
    stderr: () => stderr,
    runnerPids: () => [...stderr.matchAll(/runner started for \S+: pid (\d+)/g)].map((m) => Number(m[1])),
    request: (method, urlPath, body, options = {}) => request(port, method, urlPath, body, options),
    stream: (conversation, options) => openStream(port, conversation, options),
    sessionDir: (sessionId) => path.join(home!, 'sessions', sessionId),
    stop: () => {
      child.kill('SIGTERM');
      return exited;
    },
  };
  hosts.add(handle);
  return handle;
}

/**
 * Stop any host a test left running (SIGTERM, so it stops its runners; SIGKILL if it hangs) and kill any runner that
 * outlived its host. Returns how many hosts and runners were left.
 */
export async function stopAllHosts(): Promise<{ hosts: number; runners: number }> {
  const left = [...hosts];
  // a host left running means its test failed: its log's end says what the host was doing
  for (const h of left) process.stderr.write(`--- log of a host left running (${h.home}):\n${h.stderr().slice(-6000)}\n---\n`);
  await Promise.all(
    left.map(async (h) => {
      h.child.kill('SIGTERM');
      const timer = setTimeout(() => h.child.kill('SIGKILL'), 8000);
      await h.exited;
      clearTimeout(timer);
    }),
  );
  const runners = runnerPidsLeft();
  for (const pid of runners) process.kill(pid, 'SIGKILL');
  return { hosts: left.length, runners: runners.length };
}

/** Runner processes started by any host of this file that are still alive. */
export function runnerPidsLeft(): number[] {
  return [...allRunnerPids].filter((pid) => {
    if (isAlive(pid)) return true;
    allRunnerPids.delete(pid);
    return false;
  });
}

function request(
  port: number,
  method: string,
  urlPath: string,
  body: unknown,
  options: { token?: string | null; raw?: string; headers?: Record<string, string> },
): Promise<{ status: number; body: Record<string, unknown> }> {
  const token = options.token === undefined ? TEST_TOKEN : options.token;
  const payload = options.raw ?? (body === undefined ? undefined : JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method,
        path: urlPath,
        headers: { 'Content-Type': 'application/json', ...(token ? { Authorization: `Bearer ${token}` } : {}), ...options.headers },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: parseBody(text) }));
      },
    );
    req.on('error', reject);
    if (payload !== undefined) req.write(payload);
    req.end();
  });
}

/** JSON bodies parsed; a plain-text one (platform webhooks answer "OK") as `{ text }`. */
function parseBody(text: string): Record<string, unknown> {
  if (!text) return {};
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch {
    return { text };
  }
}

function openStream(port: number, conversation: string, options: { lastEventId?: string; paused?: boolean } = {}): SseStream {
  const events: SseEvent[] = [];
  let buffer = '';
  let ended = false;
  const req = http.get({
    host: '127.0.0.1',
    port,
    path: `/v1/conversations/${encodeURIComponent(conversation)}/stream`,
    headers: {
      Authorization: `Bearer ${TEST_TOKEN}`,
      Accept: 'text/event-stream',
      ...(options.lastEventId !== undefined ? { 'Last-Event-ID': options.lastEventId } : {}),
    },
  });
  // A paused stream reads nothing until resume(): the host's writes back up as they would for a stuck client.
  let read = (): void => undefined;
  req.on('response', (res) => {
    res.on('end', () => (ended = true));
    res.on('close', () => (ended = true));
    read = () =>
      void res.setEncoding('utf8').on('data', (chunk: string) => {
        buffer += chunk;
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const fields: Record<string, string> = {};
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) continue;
            const i = line.indexOf(':');
            if (i > 0) fields[line.slice(0, i)] = line.slice(i + 1).trimStart();
          }
          if (fields.data) events.push({ id: fields.id, event: fields.event, data: JSON.parse(fields.data) as Record<string, unknown> });
        }
      });
    if (!options.paused) read();
  });
  req.on('error', () => undefined);
  return {
    events,
    ended: () => ended,
    resume: () => read(),
    waitFor: (what, predicate, timeoutMs = 15_000) => waitFor(what, () => events.find(predicate), { timeoutMs, intervalMs: 10 }),
    close: () => req.destroy(),
  };
}
