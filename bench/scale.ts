import fs from 'node:fs';
import { cpuTimeMs, rssMiB } from './proc.js';
import { answerOn, newHome, post, provision, startHost, type ScaleHost } from './scale-host.js';
import { liveRunners } from './runner-census.js';

/**
 * One host with many sessions (`npm run bench -- --only=scale`): a home with N idle sessions (folders, databases and
 * central rows made offline by the host's own SessionDirectory, as conversations over HTTP would make them), then
 * `pincer host --http 0` on it (process runners, mock provider): spawn → ready, its RSS and its CPU over an idle
 * window, then POST → answer of `active` conversations sending at once (each its own session: a runner start on the
 * first message, then the measured second message to the live runner). And a burst: `burst` new conversations posted
 * at once through one host, until every one is answered.
 */
export interface ScaleSample {
  sessions: number;
  provisionS: number;
  startMs: number;
  rssMiB: number;
  idleCpuPercent: number;
  idleWindowMs: number;
  active: number;
  answerMs: number[];
  rssAfterMiB: number;
}

export interface BurstSample {
  conversations: number;
  /** first POST sent → every conversation answered, in ms. */
  totalMs: number;
  /** the most runner processes alive at once (sampled from /proc). */
  peakRunners: number;
  /** conversations with no answer by the deadline. */
  unanswered: number;
  /** the host's exit or the POSTs refused. */
  refused: number;
}

export interface ScaleResult {
  sizes: ScaleSample[];
  bursts: BurstSample[];
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function onHost<T>(sessions: number, run: (host: ScaleHost, provisionS: number) => Promise<T>): Promise<T> {
  const home = newHome();
  try {
    const provisionStarted = performance.now();
    provision(home, sessions);
    const provisionS = (performance.now() - provisionStarted) / 1000;
    const host = await startHost(home);
    try {
      return await run(host, provisionS);
    } finally {
      await host.stop();
    }
  } finally {
    fs.rmSync(home, { recursive: true, force: true });
  }
}

async function measureSize(sessions: number, active: number, idleWindowMs: number, settleMs: number): Promise<ScaleSample> {
  return onHost(sessions, async (host, provisionS) => {
    const pid = host.child.pid!;
    await sleep(settleMs); // the start's own after-work (first sweep, catalogue) is not idle
    const cpu0 = cpuTimeMs(pid)!;
    const t0 = performance.now();
    await sleep(idleWindowMs);
    const idleCpuPercent = ((cpuTimeMs(pid)! - cpu0) / (performance.now() - t0)) * 100;
    const rss = rssMiB(pid)!;
    const answerMs: number[] = [];
    for (const round of ['first', 'second']) {
      await Promise.all(
        Array.from({ length: active }, async (_, i) => {
          const conversation = `active-${i}`;
          const token = `scale-${round}-${i}-${sessions}`;
          const stream = answerOn(host.port, conversation, token);
          const sent = performance.now();
          const status = await post(host.port, conversation, token);
          if (status !== 202) throw new Error(`POST refused: ${status}`);
          await stream.done;
          if (round === 'second') answerMs.push(performance.now() - sent);
          stream.close();
        }),
      );
    }
    return { sessions, provisionS, startMs: host.startMs, rssMiB: rss, idleCpuPercent, idleWindowMs, active, answerMs, rssAfterMiB: rssMiB(pid)! };
  });
}

async function measureBurst(conversations: number, deadlineMs: number): Promise<BurstSample> {
  return onHost(0, async (host) => {
    let peakRunners = 0;
    let sampling = true;
    const census = (async () => {
      while (sampling) {
        let now = 0;
        for (const pids of liveRunners(host.home).values()) now += pids.length;
        peakRunners = Math.max(peakRunners, now);
        await sleep(100);
      }
    })();
    let unanswered = 0;
    let refused = 0;
    const started = performance.now();
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), deadlineMs)));
    await Promise.all(
      Array.from({ length: conversations }, async (_, i) => {
        const token = `burst-${i}`;
        const stream = answerOn(host.port, `burst-${i}`, token);
        try {
          if ((await post(host.port, `burst-${i}`, token).catch(() => 0)) !== 202) {
            refused++;
            return;
          }
          const outcome = await Promise.race([stream.done.then(() => 'answered' as const), deadline]);
          if (outcome === 'late') unanswered++;
        } catch {
          unanswered++;
        } finally {
          stream.close();
        }
      }),
    );
    const totalMs = performance.now() - started;
    clearTimeout(timer); // a pending deadline would keep the bench process alive for its whole length
    sampling = false;
    await census;
    return { conversations, totalMs, peakRunners, unanswered, refused };
  });
}

export async function measureScale(
  sizes: number[],
  active: number,
  idleWindowMs: number,
  bursts: number[],
  { settleMs, progress }: { settleMs: number; progress: (message: string) => void },
): Promise<ScaleResult> {
  const result: ScaleResult = { sizes: [], bursts: [] };
  for (const sessions of sizes) {
    progress(`scale: host with ${sessions} sessions`);
    result.sizes.push(await measureSize(sessions, Math.min(active, Math.max(1, sessions)), idleWindowMs, settleMs));
  }
  for (const conversations of bursts) {
    progress(`scale: burst of ${conversations} new conversations`);
    result.bursts.push(await measureBurst(conversations, 600_000));
  }
  return result;
}
