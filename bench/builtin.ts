import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startFakeAnthropic } from '../test/support/fake-anthropic.js';
import { closeFakeOpenAIs, startFakeOpenAI } from '../test/support/fake-openai.js';
import { descendants } from '../test/support/processes.js';
import { pssMiB, rssMiB } from './proc.js';
import { RunnerSession, sleep } from './runner-session.js';

/**
 * The built-in runtime (provider `pincer`) against the fake OpenAI-compatible model server (Chat Completions,
 * streaming, on loopback): insert → reply row of an idle runner, and the memory of the whole session — the runner and
 * every process under it (none: the Pincer tools are served inside the runner, and there is no agent binary) — at its
 * peak during the turns (sampled every 20 ms) and idle after them. The baseline, in the same run, is a Claude Code
 * session against the fake Anthropic server: the runner, the Claude Code CLI it drives for each turn and the
 * `pincer mcp` server that CLI starts. The mock runner alone (no model call, no MCP server) is measured too, as the
 * floor: what any runner costs.
 */
export interface SessionFigures {
  toReply: number[];
  /** the whole idle session: runner + descendants */
  rssMiB: number;
  pssMiB: number;
  processes: number;
  /** the largest RSS of runner + descendants seen during the turns, and how many processes it was then */
  peakRssMiB: number;
  peakProcesses: number;
}

const PEAK_SAMPLE_MS = 20;

export interface BuiltinResult {
  builtin: SessionFigures;
  claude: SessionFigures;
  mock: SessionFigures;
}

/** How long the session sits idle after its last answer before its memory is read. */
const IDLE_MS = 3000;

export async function measureBuiltin(samples: number): Promise<BuiltinResult> {
  const openai = await startFakeOpenAI();
  openai.setDefault({ text: 'ok' });
  const anthropic = await startFakeAnthropic();
  anthropic.defaultText = 'ok';
  const claudeConfig = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-bench-claude-'));
  try {
    const builtin = await measureSession(samples, { AGENT_PROVIDER: 'pincer', PINCER_MODEL: 'local/bench', OPENAI_BASE_URL: openai.baseUrl });
    const claude = await measureSession(samples, {
      AGENT_PROVIDER: 'claude',
      ANTHROPIC_BASE_URL: anthropic.url,
      ANTHROPIC_API_KEY: 'sk-ant-fake-bench-key',
      CLAUDE_CONFIG_DIR: claudeConfig,
      IS_SANDBOX: '1',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    });
    const mock = await measureSession(samples, {});
    return { builtin, claude, mock };
  } finally {
    await closeFakeOpenAIs();
    await anthropic.close();
    fs.rmSync(claudeConfig, { recursive: true, force: true });
  }
}

async function measureSession(samples: number, env: Record<string, string>): Promise<SessionFigures> {
  const session = await RunnerSession.start({ mode: 'watch', env });
  const tree = (): number[] => [session.pid, ...descendants(session.pid)];
  const rssOf = (pids: number[]): number => pids.reduce((total, pid) => total + (rssMiB(pid) ?? 0), 0);
  const peak = { rssMiB: 0, processes: 0 };
  const sampler = setInterval(() => {
    const pids = tree();
    const rss = rssOf(pids);
    if (rss > peak.rssMiB) Object.assign(peak, { rssMiB: rss, processes: pids.length });
  }, PEAK_SAMPLE_MS);
  try {
    const toReply: number[] = [];
    // The first message pays for the first model connection (and Claude Code's start); it is not counted.
    for (let i = -1; i < samples; i++) {
      const { id, at } = session.insertChat(`builtin-${i}-end`);
      await session.until('reply', () => session.hasReplyTo(id));
      if (i >= 0) toReply.push(performance.now() - at);
      await session.until('completed', () => session.isCompleted(id));
    }
    clearInterval(sampler);
    await sleep(IDLE_MS);
    const pids = tree();
    const pss = pids.reduce((total, pid) => total + (pssMiB(pid) ?? 0), 0);
    return { toReply, rssMiB: rssOf(pids), pssMiB: pss, processes: pids.length, peakRssMiB: peak.rssMiB, peakProcesses: peak.processes };
  } finally {
    clearInterval(sampler);
    await session.close();
  }
}
