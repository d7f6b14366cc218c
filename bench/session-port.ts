import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { CLI_ENTRY } from '../src/shared/cli-entry.js';
import { descendants } from '../test/support/processes.js';
import { waitFor } from '../test/support/wait.js';
import { openStream, post, TOKEN } from './platform.js';
import { pssMiB } from './proc.js';

/**
 * The session port, local vs remote, in one run: two real `pincer host --http 0` (mock provider, process runners),
 * one reaching its sessions through the local port (`session.db` in the host's process), the other through
 * `PINCER_RUNNER=session-serve` (a `pincer session-serve` child per session, HTTP on loopback). Round trip: POST a
 * message → its answer on the conversation's SSE stream, the two hosts taking turns so both see the same machine; the
 * first message of each conversation (which starts its runner or its session process) is not counted. Memory: what
 * each idle session adds to the host's side (the host's PSS, plus the session-serve process's for the remote port),
 * over `idleSessions` conversations answered once and then left idle.
 */
export interface SessionPortSamples {
  local: number[];
  remote: number[];
  /** MiB of PSS one idle session adds: the host's growth (local), the host's growth + its session-serve (remote) */
  localMiBPerSession: number;
  remoteMiBPerSession: number;
}

interface BenchHost {
  port: number;
  child: ChildProcess;
  home: string;
  stderr: () => string;
}

async function startHost(kind: 'local' | 'remote'): Promise<BenchHost> {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), `pincer-bench-port-${kind}-`));
  const child = spawn(process.execPath, [CLI_ENTRY, 'host', '--http', '0'], {
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      AGENT_PROVIDER: 'mock',
      TZ: 'UTC',
      PINCER_HOME: home,
      PINCER_HTTP_TOKEN: TOKEN,
      ...(kind === 'local' ? { PINCER_RUNNER: 'process' } : { PINCER_RUNNER: 'session-serve', PINCER_SESSION_SERVE_RUNNER: 'process' }),
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const port = await waitFor(`${kind} host listening`, () => Number(/http channel listening on http:\/\/[^:]+:(\d+)/.exec(stderr)?.[1] ?? 0), {
    timeoutMs: 30_000,
  });
  return { port, child, home, stderr: () => stderr };
}

async function stopHost(host: BenchHost): Promise<void> {
  if (host.child.exitCode === null) {
    const exited = new Promise((resolve) => host.child.once('exit', resolve));
    host.child.kill('SIGTERM');
    await exited;
  }
  fs.rmSync(host.home, { recursive: true, force: true });
}

/** One conversation's SSE stream, and a round trip through it. */
function conversation(host: BenchHost, name: string): { once: (tag: string) => Promise<number>; close: () => void } {
  const events: string[] = [];
  const stream: http.ClientRequest = openStream(host.port, name, events);
  return {
    once: async (tag) => {
      const text = `${name}-${tag}-x`;
      const started = performance.now();
      await post(host.port, `/v1/conversations/${name}/messages`, { text, sender: 'bench' });
      await waitFor(`${name} answer ${tag}`, () => events.some((e) => e.includes(text)), { timeoutMs: 30_000, intervalMs: 1 });
      return performance.now() - started;
    },
    close: () => stream.destroy(),
  };
}

/** The host's PSS plus its session-serve children's (never its runners': they are the same in both modes). */
function hostSidePss(host: BenchHost): number {
  const serves = descendants(host.child.pid!).filter((pid) => {
    try {
      return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes('session-serve');
    } catch {
      return false;
    }
  });
  return [host.child.pid!, ...serves].reduce((total, pid) => total + (pssMiB(pid) ?? 0), 0);
}

export async function measureSessionPort(messages: number, idleSessions: number): Promise<SessionPortSamples> {
  const hosts = { local: await startHost('local'), remote: await startHost('remote') };
  const result: SessionPortSamples = { local: [], remote: [], localMiBPerSession: NaN, remoteMiBPerSession: NaN };
  const open: { close: () => void }[] = [];
  try {
    const local = conversation(hosts.local, 'bench');
    const remote = conversation(hosts.remote, 'bench');
    open.push(local, remote);
    await local.once('warm');
    await remote.once('warm');
    for (let i = 0; i < messages; i++) {
      result.local.push(await local.once(String(i)));
      result.remote.push(await remote.once(String(i)));
    }
    for (const kind of ['local', 'remote'] as const) {
      const host = hosts[kind];
      const before = hostSidePss(host);
      for (let i = 0; i < idleSessions; i++) {
        const idle = conversation(host, `idle${i}`);
        open.push(idle);
        await idle.once('only');
      }
      const perSession = (hostSidePss(host) - before) / idleSessions;
      if (kind === 'local') result.localMiBPerSession = perSession;
      else result.remoteMiBPerSession = perSession;
    }
  } finally {
    for (const stream of open) stream.close();
    await stopHost(hosts.local);
    await stopHost(hosts.remote);
  }
  return result;
}
