import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * What every fault-suite scenario shares: a real `pincer host --http 0` with the mock provider on a given home, posting
 * marked messages, counting how often each marker was answered, sampling the host's CPU, and the table.
 */
const CLI = fileURLToPath(new URL(import.meta.url.endsWith('.ts') ? '../dist/src/cli/main.js' : '../src/cli/main.js', import.meta.url));
const TOKEN = 'fault-token-0123456789abcdef';

export interface FaultRow {
  scenario: string;
  sent: number;
  answered: number;
  lost: number;
  duplicated: number;
  /** the most live runners one session had at once (counted from /proc; kills scenarios only): never more than 1. */
  mostRunners?: number;
  maxHostCpu: number;
  recoveryMs: number | null;
  /** kills rows with host kills: the longest a killed host's runners lived on after it (until ended, or the next host ended them). */
  leftoverMs?: number;
  note?: string;
}

export interface RunningHost {
  child: ChildProcess;
  port: number;
  stderr: () => string;
}

/**
 * `env` adds to (or overrides) the suite's settings: another provider, its fake model server. Runners are plain
 * processes unless `env` says otherwise (PINCER_RUNNER; the kills scenario runs in each mode).
 */
export async function startHost(home: string, env: Record<string, string> = {}): Promise<RunningHost> {
  const child = spawn(process.execPath, [CLI, 'host', '--http', '0'], {
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      AGENT_PROVIDER: 'mock',
      PINCER_RUNNER: 'process',
      TZ: 'UTC',
      PINCER_HOME: home,
      PINCER_HTTP_TOKEN: TOKEN,
      PINCER_SWEEP_INTERVAL_MS: '200',
      PINCER_RUNNER_BACKOFF_MS: '100',
      PINCER_RUNNER_BACKOFF_MAX_MS: '1000',
      PINCER_STALE_MS: '300',
      PINCER_RETRY_BASE_MS: '50',
      PINCER_RETRY_MAX_MS: '500',
      PINCER_MAX_TRIES: '50',
      MOCK_DELAY_MS: '20',
      ...env,
    },
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

/** Post one message; the id of its session when the host accepted it (202), else undefined. */
export async function post(port: number, conversation: string, text: string): Promise<string | undefined> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/v1/conversations/${conversation}/messages`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ text }),
    });
    const body = (await res.json().catch(() => ({}))) as { sessionId?: string };
    return res.status === 202 ? (body.sessionId ?? '') : undefined;
  } catch {
    return undefined; // the host is down (killed): not accepted
  }
}

/** Every chat text the agent sent to a conversation (GET …/events, page by page). */
export async function replies(port: number, conversation: string): Promise<string[]> {
  const texts: string[] = [];
  let after = 0;
  for (;;) {
    const res = await fetch(`http://127.0.0.1:${port}/v1/conversations/${conversation}/events?after=${after}`, {
      headers: { Authorization: `Bearer ${TOKEN}` },
    });
    const body = (await res.json()) as { events: { type: string; text?: string }[]; more?: boolean; nextAfter?: number | null };
    for (const e of body.events) if (e.type === 'chat' && e.text) texts.push(e.text);
    if (!body.more || !body.nextAfter) return texts;
    after = body.nextAfter;
  }
}

/** How often each accepted message's marker appears in the answers. */
export async function count(port: number, conversations: string[], accepted: string[]): Promise<{ answered: number; lost: number; duplicated: number }> {
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

export function cpuMs(pid: number): number {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(f[11]) + Number(f[12])) * 1000) / 100;
  } catch {
    return 0;
  }
}

/** Samples a process's CPU share every 500 ms; `max()` is the highest seen. */
export function cpuSampler(getPid: () => number | undefined): { max(): number; stop(): void } {
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

export async function waitAllAnswered(port: () => number, conversations: string[], accepted: string[], timeoutMs: number): Promise<boolean> {
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

export function skipped(scenario: string, why: string): FaultRow {
  return { scenario, sent: 0, answered: 0, lost: 0, duplicated: 0, maxHostCpu: 0, recoveryMs: null, note: `skipped: ${why}` };
}

export function fill(file: string): string {
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

export async function stop(host: RunningHost): Promise<void> {
  if (host.child.exitCode !== null) return;
  host.child.kill('SIGTERM');
  const timer = setTimeout(() => host.child.kill('SIGKILL'), 10_000);
  await new Promise((resolve) => host.child.once('exit', resolve));
  clearTimeout(timer);
}

/** Runners a killed host left behind (a later host stops them; the last one's are stopped here). */
export function killRunnersOf(home: string): void {
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

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export function formatFaultTable(rows: FaultRow[]): string {
  const header = ['scenario', 'sent', 'answered', 'lost', 'duplicated', 'most runners', 'max host CPU', 'recovery'];
  const body = rows.map((r) => [
    r.scenario,
    String(r.sent),
    String(r.answered),
    String(r.lost),
    String(r.duplicated),
    r.mostRunners === undefined ? '' : String(r.mostRunners),
    `${Math.round(r.maxHostCpu * 100)} %`,
    r.note ?? (r.recoveryMs === null ? 'not recovered' : `${(r.recoveryMs / 1000).toFixed(1)} s`),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((row) => row[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  return [line(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...body.map(line)].join('\n');
}
