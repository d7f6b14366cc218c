import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
export { formatFaultTable } from './fault-host.js';
import { dbFaultScenario } from './fault-db.js';
import { mcpKillsScenario } from './fault-mcp.js';
import { alive, count, replies, cpuSampler, fill, formatFaultTable, killRunnersOf, post, skipped, startHost, stop, waitAllAnswered, sleep, type FaultRow } from './fault-host.js';

/**
 * The fault suite (`npm run fault`, `npm run fault -- --quick`): a real `pincer host --http 0` with the mock provider,
 * a stream of messages, and faults at random moments — runner SIGKILLs, host SIGKILLs (restarted on the same home),
 * a full disk (a small tmpfs; root only). It prints one row per scenario: messages sent (accepted with 202), answered,
 * lost, duplicated, the host's highest CPU share, and the time from the last fault's end until every accepted message
 * was answered. docs/reliability.md explains the columns and the at-least-once window.
 */
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
    if ((await post(host.port, conversations[i % conversations.length]!, `${marker} hello`)) !== undefined) accepted.push(marker);
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
  if (counts.duplicated > 0 && process.env.FAULT_DEBUG) {
    const all = (await Promise.all(conversations.map(async (c) => (await replies(host.port, c)).map((t) => `${c}: ${t}`)))).flat();
    const twice = accepted.filter((m) => all.filter((t) => t.includes(m)).length > 1);
    process.stderr.write(`duplicated: ${twice.join(' ')}\nhome: ${home}\n${all.filter((t) => twice.some((m) => t.includes(m))).join('\n')}\n`);
  }
  cpu.stop();
  await stop(host);
  killRunnersOf(home);
  if (!process.env.FAULT_DEBUG) fs.rmSync(home, { recursive: true, force: true });
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
    return { scenario: 'disk full (tmpfs)', sent: accepted.length, ...counts, maxHostCpu: cpu.max(), recoveryMs, ...(exited !== null ? { note: `host exited ${exited}` } : {}) };
  } finally {
    spawnSync('umount', ['-l', dir]);
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const quick = process.argv.includes('--quick');
  const rows = [
    await killsScenario(quick ? 100 : 1000, quick ? 1 : 6),
    await mcpKillsScenario(quick ? 10 : 40),
    await diskFullScenario(quick ? 5 : 20),
    await dbFaultScenario('read-only', quick ? 60 : 200),
    await dbFaultScenario('deleted', quick ? 60 : 200),
    await dbFaultScenario('damaged', quick ? 60 : 200),
  ];
  process.stdout.write(`${formatFaultTable(rows)}\n`);
  process.exitCode = rows.some((r) => r.lost > 0 || r.recoveryMs === null && !r.note) ? 1 : 0;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) await main();
