import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The fault suite (`npm run fault`, `npm run fault -- --quick`): a real `pincer host --http 0` with the mock provider,
 * a stream of messages, and faults at random moments — runner SIGKILLs, host SIGKILLs (restarted on the same home),
 * a full disk (a small tmpfs; root only). It prints one row per scenario: messages sent (accepted with 202), answered,
 * lost, duplicated, the host's highest CPU share, and the time from the last fault's end until every accepted message
 * was answered. docs/reliability.md explains the columns and the at-least-once window.
 */
/** the compiled CLI, whether this runs compiled (dist/bench) or from source under vitest (bench/). */
const CLI = fileURLToPath(new URL(import.meta.url.endsWith('.ts') ? '../dist/src/cli/main.js' : '../src/cli/main.js', import.meta.url));
const TOKEN = 'fault-token-0123456789abcdef';

export interface FaultRow {
  scenario: string;
  sent: number;
  answered: number;
  lost: number;
  duplicated: number;
  maxHostCpu: number;
  recoveryMs: number | null;
  note?: string;
}

interface RunningHost {
  child: ChildProcess;
  port: number;
  stderr: () => string;
}

async function startHost(home: string): Promise<RunningHost> {
  const child = spawn(process.execPath, [CLI, 'host', '--http', '0'], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, AGENT_PROVIDER: 'mock', TZ: 'UTC', PINCER_HOME: home, PINCER_HTTP_TOKEN: TOKEN, PINCER_SWEEP_INTERVAL_MS: '200', PINCER_RUNNER_BACKOFF_MS: '100', PINCER_RUNNER_BACKOFF_MAX_MS: '1000', PINCER_STALE_MS: '300', PINCER_RETRY_BASE_MS: '50', PINCER_RETRY_MAX_MS: '500', PINCER_MAX_TRIES: '50', MOCK_DELAY_MS: '20' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  const deadline = Date.now() + 30_000;
  for (;;) {
    const m = /http channel listening on http:\/\/[^:]+:(\d+)/.exec(stderr);
    if (m) return { child, port: Number(m[1]), stderr: () => stderr };
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`host did not start: ${stderr}`);
    await sleep(50);
  }
}

async function post(port: number, conversation: string, text: string): Promise<boolean> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/v1/conversations/${conversation}/messages`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ text }),
    });
    await res.arrayBuffer();
    return res.status === 202;
  } catch {
    return false; // the host is down (killed): not accepted
  }
}

/** Every chat text the agent sent to a conversation (GET …/events, page by page). */
async function replies(port: number, conversation: string): Promise<string[]> {
  const texts: string[] = [];
  let after = 0;
  for (;;) {
    const res = await fetch(`http://127.0.0.1:${port}/v1/conversations/${conversation}/events?after=${after}`, { headers: { Authorization: `Bearer ${TOKEN}` } });
    const body = (await res.json()) as { events: { type: string; text?: string }[]; more?: boolean; nextAfter?: number | null };
    for (const e of body.events) if (e.type === 'chat' && e.text) texts.push(e.text);
    if (!body.more || !body.nextAfter) return texts;
    after = body.nextAfter;
  }
}

/** How often each accepted message's marker appears in the answers. */
async function count(port: number, conversations: string[], accepted: string[]): Promise<{ answered: number; lost: number; duplicated: number }> {
  const all = (await Promise.all(conversations.map((c) => replies(port, c)))).flat();
  let answered = 0;
  let duplicated = 0;
  for (const marker of accepted) {
    const n = all.filter((text) => text.includes(marker)).length;
    if (n > 0) answered++;
    if (n > 1) duplicated++;
  }
  return { answered, lost: accepted.length - answered, duplicated };
}

function cpuMs(pid: number): number {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(f[11]) + Number(f[12])) * 1000) / 100;
  } catch {
    return 0;
  }
}

/** Samples a process's CPU share every 500 ms; `max()` is the highest seen. */
function cpuSampler(getPid: () => number | undefined): { max(): number; stop(): void } {
  let max = 0;
  let last: { pid: number; cpu: number; at: number } | undefined;
  const timer = setInterval(() => {
    const pid = getPid();
    if (!pid) return;
    const cpu = cpuMs(pid);
    const at = Date.now();
    if (last && last.pid === pid && at > last.at) max = Math.max(max, (cpu - last.cpu) / (at - last.at));
    last = { pid, cpu, at };
  }, 500);
  return { max: () => max, stop: () => clearInterval(timer) };
}

async function waitAllAnswered(port: () => number, conversations: string[], accepted: string[], timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      if ((await count(port(), conversations, accepted)).lost === 0) return true;
    } catch {
      // host restarting
    }
    await sleep(250);
  }
  return false;
}

/** Messages at a steady pace while runners (and, with `hostKills`, the host) are SIGKILLed at random moments. */
export async function killsScenario(messages: number, hostKills: number): Promise<FaultRow> {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-fault-'));
  let host = await startHost(home);
  const conversations = ['f1', 'f2', 'f3', 'f4'];
  const accepted: string[] = [];
  const cpu = cpuSampler(() => host.child.pid);
  let runnerKills = 0;
  const hostKillAt = new Set(Array.from({ length: hostKills }, (_, i) => Math.floor(((i + 1) * messages) / (hostKills + 1))));
  for (let i = 0; i < messages; i++) {
    const marker = `[msg-${String(i).padStart(5, '0')}]`;
    if (await post(host.port, conversations[i % conversations.length]!, `${marker} hello`)) accepted.push(marker);
    if (Math.random() < 0.08) {
      const pids = [...host.stderr().matchAll(/runner started for \S+: pid (\d+)/g)].map((m) => Number(m[1]));
      const pid = pids[Math.floor(Math.random() * pids.length)];
      if (pid && alive(pid)) {
        process.kill(pid, 'SIGKILL');
        runnerKills++;
      }
    }
    if (hostKillAt.has(i)) {
      host.child.kill('SIGKILL');
      await new Promise((resolve) => host.child.once('exit', resolve));
      host = await startHost(home);
    }
  }
  const faultEnded = Date.now();
  const done = await waitAllAnswered(() => host.port, conversations, accepted, 120_000);
  const recoveryMs = done ? Date.now() - faultEnded : null;
  const counts = await count(host.port, conversations, accepted);
  cpu.stop();
  await stop(host);
  killRunnersOf(home);
  return { scenario: `kills (${runnerKills} runner, ${hostKills} host SIGKILLs)`, sent: accepted.length, ...counts, maxHostCpu: cpu.max(), recoveryMs };
}

/** A full disk (a small tmpfs home; root only): messages during the fault, then space returns. */
export async function diskFullScenario(messages: number): Promise<FaultRow> {
  if (process.getuid?.() !== 0) return skipped('disk full', 'needs root to mount a small tmpfs');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-fault-tmpfs-'));
  if (spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=32m', 'tmpfs', dir]).status !== 0) return skipped('disk full', 'mount -t tmpfs is not allowed here');
  try {
    const host = await startHost(dir);
    const conversations = ['disk'];
    const accepted: string[] = [];
    if (await post(host.port, 'disk', '[disk-first] hello')) accepted.push('[disk-first]');
    await waitAllAnswered(() => host.port, conversations, accepted, 30_000);
    const filler = fill(path.join(dir, 'filler'));
    const cpu = cpuSampler(() => host.child.pid);
    for (let i = 0; i < messages; i++) {
      const marker = `[disk-${i}]`;
      if (await post(host.port, 'disk', `${marker} ${'x'.repeat(20_000)}`)) accepted.push(marker);
    }
    await sleep(3000);
    fs.rmSync(filler);
    const faultEnded = Date.now();
    const done = await waitAllAnswered(() => host.port, conversations, accepted, 60_000);
    const recoveryMs = done ? Date.now() - faultEnded : null;
    const counts = await count(host.port, conversations, accepted);
    cpu.stop();
    const exited = host.child.exitCode;
    await stop(host);
    killRunnersOf(dir);
    return { scenario: 'disk full (tmpfs)', sent: accepted.length, ...counts, maxHostCpu: cpu.max(), recoveryMs, ...(exited !== null ? { note: `host exited ${exited}` } : {}) };
  } finally {
    spawnSync('umount', ['-l', dir]);
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function skipped(scenario: string, why: string): FaultRow {
  return { scenario, sent: 0, answered: 0, lost: 0, duplicated: 0, maxHostCpu: 0, recoveryMs: null, note: `skipped: ${why}` };
}

function fill(file: string): string {
  const fd = fs.openSync(file, 'w');
  try {
    for (;;) fs.writeSync(fd, Buffer.alloc(64 * 1024));
  } catch {
    // ENOSPC
  } finally {
    fs.closeSync(fd);
  }
  return file;
}

async function stop(host: RunningHost): Promise<void> {
  if (host.child.exitCode !== null) return;
  host.child.kill('SIGTERM');
  const timer = setTimeout(() => host.child.kill('SIGKILL'), 10_000);
  await new Promise((resolve) => host.child.once('exit', resolve));
  clearTimeout(timer);
}

/** Runners a killed host left behind (a later host stops them; the last one's are stopped here). */
function killRunnersOf(home: string): void {
  const out = spawnSync('pgrep', ['-f', 'runner'], { encoding: 'utf8' }).stdout ?? '';
  for (const pid of out.split('\n').filter(Boolean).map(Number)) {
    try {
      const env = fs.readFileSync(`/proc/${pid}/environ`, 'utf8');
      if (env.includes(home)) process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export function formatFaultTable(rows: FaultRow[]): string {
  const header = ['scenario', 'sent', 'answered', 'lost', 'duplicated', 'max host CPU', 'recovery'];
  const body = rows.map((r) => [r.scenario, String(r.sent), String(r.answered), String(r.lost), String(r.duplicated), `${Math.round(r.maxHostCpu * 100)} %`, r.note ?? (r.recoveryMs === null ? 'not recovered' : `${(r.recoveryMs / 1000).toFixed(1)} s`)]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((row) => row[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  return [line(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...body.map(line)].join('\n');
}

async function main(): Promise<void> {
  const quick = process.argv.includes('--quick');
  const rows = [await killsScenario(quick ? 100 : 1000, quick ? 1 : 6), await diskFullScenario(quick ? 5 : 20)];
  process.stdout.write(`${formatFaultTable(rows)}\n`);
  process.exitCode = rows.some((r) => r.lost > 0 || r.recoveryMs === null && !r.note) ? 1 : 0;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) await main();
