import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
export { formatFaultTable } from './fault-host.js';
import { dbFaultScenario } from './fault-db.js';
import { mcpKillsScenario } from './fault-mcp.js';
import { runnerUnder } from '../src/container/bwrap.js';
import { descendants } from '../test/support/processes.js';
import { liveRunners, liveServes, runnerCensus } from './runner-census.js';
import {
  alive,
  count,
  replies,
  cpuSampler,
  fill,
  formatFaultTable,
  killRunnersOf,
  post,
  skipped,
  startHost,
  stop,
  waitAllAnswered,
  sleep,
  type FaultRow,
} from './fault-host.js';

/**
 * The fault suite (`npm run fault`, `npm run fault -- --quick`): a real `pincer host --http 0` with the mock provider,
 * a stream of messages, and faults at random moments — runner SIGKILLs, host SIGKILLs (restarted on the same home),
 * a full disk (a small tmpfs; root only). It prints one row per scenario: messages sent (accepted with 202), answered,
 * lost, duplicated, the host's highest CPU share, and the time from the last fault's end until every accepted message
 * was answered. docs/reliability.md explains the columns and the at-least-once window.
 */
/**
 * The runner kinds the kills scenario runs in (`npm run fault -- --runner=process|bwrap|docker|session-serve`);
 * `session-serve` puts each session in its own `pincer session-serve` process (with process runners inside).
 */
export type FaultRunner = 'process' | 'bwrap' | 'docker' | 'session-serve';
const FAULT_RUNNERS: readonly FaultRunner[] = ['process', 'bwrap', 'docker', 'session-serve'];

/**
 * Messages at a steady pace while runners (and, with `hostKills`, the host) are SIGKILLed at random moments. A runner
 * kill is what a real failure kills in that mode: the runner process; the sandbox's bwrap or the runner inside it; the
 * container or its `docker run` client. Throughout, the live runners of every session are counted from /proc: the row's
 * `runners` column is the most one session ever had at once (the invariant: 1), and none may outlive the last host.
 * `env` adds the mode's settings (Docker: DOCKER_HOST, PINCER_CONTAINER_IMAGE).
 */
export async function killsScenario(messages: number, hostKills: number, runner: FaultRunner = 'process', env: Record<string, string> = {}): Promise<FaultRow> {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-fault-'));
  const hostEnv = { ...env, PINCER_RUNNER: runner, ...(runner === 'session-serve' ? { PINCER_SESSION_SERVE_RUNNER: 'process' } : {}) };
  let host = await startHost(home, hostEnv);
  const census = runnerCensus(home);
  const serves = runnerCensus(home, 100, liveServes);
  const conversations = ['f1', 'f2', 'f3', 'f4'];
  const accepted: string[] = [];
  const cpu = cpuSampler(() => host.child.pid);
  let runnerKills = 0;
  // after every host kill: the runners it left, and how long until each of them was gone (by itself or ended by the
  // next host, which must wait for it before it starts its own)
  const leftovers: Promise<number>[] = [];
  const hostKillAt = new Set(Array.from({ length: hostKills }, (_, i) => Math.floor(((i + 1) * messages) / (hostKills + 1))));
  for (let i = 0; i < messages; i++) {
    const marker = `[msg-${String(i).padStart(5, '0')}]`;
    if ((await post(host.port, conversations[i % conversations.length]!, `${marker} hello`)) !== undefined) accepted.push(marker);
    if (Math.random() < 0.08 && killOneRunner(host.stderr(), runner, env)) runnerKills++;
    if (hostKillAt.has(i)) {
      host.child.kill('SIGKILL');
      await new Promise((resolve) => host.child.once('exit', resolve));
      leftovers.push(goneWithin(new Set([...liveRunners(home).values(), ...liveServes(home).values()].flat()), 30_000));
      host = await startHost(home, hostEnv);
      census.sample();
      serves.sample();
    }
  }
  const faultEnded = Date.now();
  const done = await waitAllAnswered(() => host.port, conversations, accepted, 120_000);
  const recoveryMs = done ? Date.now() - faultEnded : null;
  const counts = await count(host.port, conversations, accepted);
  if ((counts.duplicated > 0 || census.most() > 1 || serves.most() > 1) && process.env.FAULT_DEBUG) {
    const all = (await Promise.all(conversations.map(async (c) => (await replies(host.port, c)).map((t) => `${c}: ${t}`)))).flat();
    const twice = accepted.filter((m) => all.filter((t) => t.includes(m)).length > 1);
    process.stderr.write(
      `duplicated: ${twice.join(' ')}\nhome: ${home}\ntwo runners: ${census.where() ?? 'never'}\ntwo session processes: ${serves.where() ?? 'never'}\n${all.filter((t) => twice.some((m) => t.includes(m))).join('\n')}\n`,
    );
  }
  cpu.stop();
  await stop(host);
  // the last host stopped its runners; those of the hosts it replaced must be gone by themselves
  const deadline = Date.now() + 15_000;
  while ((liveRunners(home).size > 0 || liveServes(home).size > 0) && Date.now() < deadline) await sleep(100);
  const left = [...liveRunners(home).values()].flat().length + [...liveServes(home).values()].flat().length;
  const leftoverMs = Math.max(0, ...(await Promise.all(leftovers)));
  census.stop();
  serves.stop();
  killRunnersOf(home);
  if (!process.env.FAULT_DEBUG) fs.rmSync(home, { recursive: true, force: true });
  return {
    scenario: `${runner === 'session-serve' ? `kills, session-serve (${runnerKills} session process or runner` : `kills, ${runner} runners (${runnerKills} runner`}, ${hostKills} host SIGKILLs${leftovers.length > 0 && leftoverMs !== Infinity ? `; left runners gone ≤ ${(leftoverMs / 1000).toFixed(1)} s` : ''})`,
    sent: accepted.length,
    ...counts,
    mostRunners: Math.max(census.most(), serves.most()),
    maxHostCpu: cpu.max(),
    recoveryMs,
    ...(left > 0 ? { note: `${left} runner or session process(es) outlived the host` } : {}),
    ...(leftoverMs === Infinity ? { note: 'a runner of a killed host was still alive 30 s later' } : {}),
    ...(hostKills > 0 ? { leftoverMs } : {}),
  };
}

/** How long until every one of `pids` has ended (Infinity: one was still alive after `timeoutMs`). */
async function goneWithin(pids: Set<number>, timeoutMs: number): Promise<number> {
  const started = Date.now();
  while ([...pids].some(alive)) {
    if (Date.now() - started > timeoutMs) return Infinity;
    await sleep(50);
  }
  return Date.now() - started;
}

/** SIGKILL one of the host's runners, as a failure in that mode would; whether one was killed. */
function killOneRunner(hostLog: string, runner: FaultRunner, env: Record<string, string>): boolean {
  if (runner === 'session-serve') return killOneServe(hostLog);
  const started = [...hostLog.matchAll(/runner started for (\S+): pid (\d+)/g)].map((m) => ({ session: m[1]!, pid: Number(m[2]) }));
  const pick = started[Math.floor(Math.random() * started.length)];
  if (!pick || !alive(pick.pid)) return false;
  const inner = Math.random() < 0.5;
  if (runner === 'docker' && inner) {
    // the container itself (the docker client the host started then exits)
    const killed = spawnSync('docker', ['kill', `pincer-runner-${pick.session}`], { env: { ...process.env, ...env }, stdio: 'ignore' });
    return killed.status === 0;
  }
  const pid = runner === 'bwrap' && inner ? runnerUnder(pick.pid) : pick.pid; // the runner inside the sandbox, or bwrap
  if (pid === undefined) return false;
  process.kill(pid, 'SIGKILL');
  return true;
}

/** SIGKILL a session's `session-serve` process, or the runner it supervises. */
function killOneServe(hostLog: string): boolean {
  const serves = [...hostLog.matchAll(/session-serve pid (\d+), epoch/g)].map((m) => Number(m[1])).filter(alive);
  const serve = serves[Math.floor(Math.random() * serves.length)];
  if (serve === undefined) return false;
  const runner = descendants(serve).find((pid) => {
    try {
      return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).at(-1) === 'runner';
    } catch {
      return false;
    }
  });
  process.kill(Math.random() < 0.5 || runner === undefined ? serve : runner, 'SIGKILL');
  return true;
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
    if ((await post(host.port, 'disk', '[disk-first] hello')) !== undefined) accepted.push('[disk-first]');
    await waitAllAnswered(() => host.port, conversations, accepted, 30_000);
    const filler = fill(path.join(dir, 'filler'));
    const cpu = cpuSampler(() => host.child.pid);
    for (let i = 0; i < messages; i++) {
      const marker = `[disk-${i}]`;
      if ((await post(host.port, 'disk', `${marker} ${'x'.repeat(20_000)}`)) !== undefined) accepted.push(marker);
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
    return {
      scenario: 'disk full (tmpfs)',
      sent: accepted.length,
      ...counts,
      maxHostCpu: cpu.max(),
      recoveryMs,
      ...(exited !== null ? { note: `host exited ${exited}` } : {}),
    };
  } finally {
    spawnSync('umount', ['-l', dir]);
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const quick = process.argv.includes('--quick');
  const runners = (process.argv.find((arg) => arg.startsWith('--runner='))?.slice('--runner='.length) ?? 'process').split(',');
  for (const runner of runners)
    if (!FAULT_RUNNERS.includes(runner as FaultRunner)) throw new Error(`unknown runner "${runner}" (known: ${FAULT_RUNNERS.join(', ')})`);
  // Docker runners use the daemon and image of this environment (`pincer container image` builds it)
  const dockerEnv = Object.fromEntries(['DOCKER_HOST', 'PINCER_CONTAINER_IMAGE'].flatMap((name) => (process.env[name] ? [[name, process.env[name]!]] : [])));
  const rows: FaultRow[] = [];
  for (const runner of runners) rows.push(await killsScenario(quick ? 100 : 1000, quick ? 1 : 6, runner as FaultRunner, runner === 'docker' ? dockerEnv : {}));
  rows.push(
    await mcpKillsScenario(quick ? 10 : 40),
    await diskFullScenario(quick ? 5 : 20),
    await dbFaultScenario('read-only', quick ? 60 : 200),
    await dbFaultScenario('deleted', quick ? 60 : 200),
    await dbFaultScenario('damaged', quick ? 60 : 200),
  );
  process.stdout.write(`${formatFaultTable(rows)}\n`);
  // a kills row must also duplicate nothing (every mock answer completes its messages with it) and leave no runner
  const kills = (r: FaultRow): boolean => r.mostRunners !== undefined;
  process.exitCode = rows.some(
    (r) => r.lost > 0 || (r.mostRunners ?? 0) > 1 || (kills(r) && (r.duplicated > 0 || r.note !== undefined)) || (r.recoveryMs === null && !r.note),
  )
    ? 1
    : 0;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) await main();
