import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { onPath } from './support/dockerd.js';
import { closeServer, listenOnLoopback } from './support/fake-http.js';
import { startHost, stopAllHosts, type HostHandle } from './support/host-harness.js';
import { waitFor } from './support/wait.js';

/**
 * A sandboxed agent opens connections to the credential proxy's socket by the thousand. The host's
 * open-file limit is lowered (prlimit on its pid) so a thousand are past it: on a proxy without caps the host runs out
 * of descriptors and its HTTP API stops answering. With the caps the excess is refused with a clear HTTP answer the
 * agent reads, logged once, and the API answers while the rest are held.
 */
const noBwrap = onPath('bwrap') ? undefined : 'bubblewrap is not installed';
const noPrlimit = onPath('prlimit') ? undefined : 'prlimit is not installed';
const skip = noBwrap ?? noPrlimit;
if (skip) console.warn(`[hostile] skipping the proxy connection flood: ${skip}`);

const FD_LIMIT = 512;
const ATTEMPTS = 1000;

const servers: http.Server[] = [];
afterEach(async () => {
  expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
  await Promise.all(servers.splice(0).map(closeServer));
});

/**
 * The attack, run by a task's script inside the sandbox: connect to the proxy's socket `n` times (in batches: a full
 * backlog refuses a Unix connect at once), note what each connection is told, hold the rest until the test says so.
 */
function attackScript(n: number): string {
  const js = `
const net = require('net'), fs = require('fs');
const N = ${n}, SOCK = '/run/pincer-proxy/proxy.sock';
let tried = 0, open = 0, refused = 0, errors = 0, sample = ''; const codes = {};
const report = (done) => { fs.writeFileSync('/workspace/attack.tmp', JSON.stringify({ tried, open, refused, errors, sample, done, codes })); fs.renameSync('/workspace/attack.tmp', '/workspace/attack.json'); };
function one() {
  return new Promise((resolve) => {
    tried++;
    const s = net.connect(SOCK);
    let got = '', connected = false;
    s.setEncoding('utf8');
    s.on('connect', () => { connected = true; open++; setTimeout(resolve, 20); });
    s.on('data', (d) => { got += d; if (!sample) sample = got.slice(0, 600); });
    s.on('error', (e) => { codes[e.code] = (codes[e.code] || 0) + 1; });
    s.on('close', () => {
      if (connected) open--;
      if (/^HTTP\\/1\\.1 (429|503) /.test(got)) refused++; else errors++;
      resolve();
    });
  });
}
(async () => {
  for (let i = 0; i < N; i += 25) await Promise.all(Array.from({ length: Math.min(25, N - i) }, one));
  await new Promise((r) => setTimeout(r, 1500)); // late refusals arrive
  report(true);
  const until = Date.now() + 120000;
  while (!fs.existsSync('/workspace/release') && Date.now() < until) { await new Promise((r) => setTimeout(r, 200)); report(true); }
  process.exit(0);
})();
`;
  return `cat > /tmp/attack.js <<'EOF'\n${js}\nEOF\nulimit -n 4096 2>/dev/null || ulimit -n hard\nnode /tmp/attack.js >/dev/null 2>&1\necho '{"wakeAgent":false}'`;
}

interface AttackState {
  tried: number;
  open: number;
  refused: number;
  errors: number;
  sample: string;
  done: boolean;
  /** the error codes of connections that failed otherwise. */
  codes: Record<string, number>;
}

function readAttack(file: string): AttackState | undefined {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8')) as AttackState;
  } catch {
    return undefined; // not written yet
  }
}

function openFiles(pid: number): number {
  return fs.readdirSync(`/proc/${pid}/fd`).length;
}

async function floodHost(env: Record<string, string>): Promise<{ host: HostHandle; attack: AttackState; release: () => void; apiAnswers: number[] }> {
  const upstream = http.createServer((_req, res) => res.end('{}'));
  servers.push(upstream);
  const url = await listenOnLoopback(upstream);
  const host = await startHost({
    PINCER_RUNNER: 'bwrap',
    ANTHROPIC_API_KEY: 'sk-ant-real-flood',
    ANTHROPIC_BASE_URL: url,
    PINCER_SCRIPT_TIMEOUT_MS: '170000',
    // the script runs for minutes: its row must not be taken for stale and the script run again meanwhile
    PINCER_STALE_MS: '600000',
    PINCER_MAX_TRIES: '1',
    ...env,
  });
  const pid = host.child.pid!;
  // the soft limit only: the runner started after this inherits it, and the attack raises its own back (ulimit -n)
  const limited = spawnSync('prlimit', ['--pid', String(pid), `--nofile=${FD_LIMIT}:`], { encoding: 'utf8' });
  expect(limited.status, limited.stderr).toBe(0);
  const before = openFiles(pid);
  expect(before).toBeLessThan(FD_LIMIT / 2); // room for the caps: the flood is what would fill it
  const task = await host.request('POST', '/v1/conversations/flood/tasks', {
    prompt: 'p',
    processAfter: new Date().toISOString(),
    script: attackScript(ATTEMPTS),
  });
  expect(task.status, JSON.stringify(task.body)).toBe(202);
  const dir = host.sessionDir(task.body.sessionId as string);
  const file = path.join(dir, 'attack.json');
  // while the flood is on and once it is held, the HTTP API answers (a request that cannot even connect counts as 0)
  const apiAnswers: number[] = [];
  const attack = await waitFor(
    'the flood to be held',
    async () => {
      const res = await host.request('GET', '/v1/sessions').catch(() => ({ status: 0 }));
      apiAnswers.push(res.status);
      const state = readAttack(file);
      return state?.done ? state : undefined;
    },
    { timeoutMs: 150_000, intervalMs: 500 },
  );
  for (let i = 0; i < 5; i++) apiAnswers.push((await host.request('GET', '/v1/sessions').catch(() => ({ status: 0 }))).status);
  return { host, attack, release: () => fs.writeFileSync(path.join(dir, 'release'), ''), apiAnswers };
}

describe.skipIf(skip !== undefined)('point 8: a flood of connections to the credential proxy', { timeout: 240_000 }, () => {
  it('past one runner’s cap is refused with 429 it can read, logged once; the HTTP API answers while the rest are held', async () => {
    const { host, attack, release, apiAnswers } = await floodHost({});
    expect(apiAnswers.filter((s) => s !== 200)).toEqual([]);
    expect(attack.tried).toBe(ATTEMPTS);
    expect(attack.codes).toEqual({});
    expect(attack.open).toBeLessThanOrEqual(64);
    expect(attack.refused).toBeGreaterThanOrEqual(ATTEMPTS - 64);
    expect(attack.sample).toMatch(/^HTTP\/1\.1 429 /);
    expect(attack.sample).toContain('this runner holds 64 connections to the proxy, its limit (PINCER_PROXY_RUNNER_CONNECTIONS)');
    expect(openFiles(host.child.pid!)).toBeLessThan(FD_LIMIT);
    expect(host.stderr().match(/holds 64 connections, its limit: refusing more/g)).toHaveLength(1);
    release();
    expect(await host.stop()).toBe(0);
  });

  it('past the global cap (a quarter of the host’s open-file limit) is refused with 503, whatever the runner’s own cap', async () => {
    const { host, attack, release, apiAnswers } = await floodHost({ PINCER_PROXY_RUNNER_CONNECTIONS: '100000' });
    expect(apiAnswers.filter((s) => s !== 200)).toEqual([]);
    expect(attack.tried).toBe(ATTEMPTS);
    expect(attack.codes).toEqual({});
    expect(attack.open).toBeLessThanOrEqual(FD_LIMIT / 4);
    expect(attack.refused).toBeGreaterThanOrEqual(ATTEMPTS - FD_LIMIT / 4);
    expect(attack.sample).toMatch(/^HTTP\/1\.1 503 [\s\S]*it holds 128 connections, its limit/);
    expect(openFiles(host.child.pid!)).toBeLessThan(FD_LIMIT);
    expect(host.stderr().match(/its cap \(below the host's open-file limit\)/g)).toHaveLength(1);
    release();
    expect(await host.stop()).toBe(0);
  });
});
