import { closeFakeOpenAIs, startFakeOpenAI } from '../test/support/fake-openai.js';
import { descendants } from '../test/support/processes.js';
import { pssMiB, rssMiB } from './proc.js';
import { RunnerSession, sleep } from './runner-session.js';

/**
 * The built-in runtime (provider `pincer`) against the fake OpenAI-compatible model server (Chat Completions,
 * streaming, on loopback): insert → reply row of an idle runner, and the memory of the whole idle session — the
 * runner and every process under it (none: the Pincer tools are served inside the runner, and there is no agent
 * binary). The baseline, in the same run, is the
 * mock provider: the runner alone, with no model call and no MCP server. Claude Code, for comparison, costs about
 * 250 MB per session on top of the runner (docs/providers.md).
 */
export interface BuiltinResult {
  toReply: number[];
  mockToReply: number[];
  /** the whole idle session: runner + descendants */
  sessionRssMiB: number;
  sessionPssMiB: number;
  processes: number;
  mockRssMiB: number;
  mockPssMiB: number;
}

/** How long the session sits idle after its last answer before its memory is read. */
const IDLE_MS = 3000;

export async function measureBuiltin(samples: number): Promise<BuiltinResult> {
  const fake = await startFakeOpenAI();
  fake.setDefault({ text: 'ok' });
  try {
    const builtin = await measureSession(samples, { AGENT_PROVIDER: 'pincer', PINCER_MODEL: 'local/bench', OPENAI_BASE_URL: fake.baseUrl });
    const mock = await measureSession(samples, {});
    return {
      toReply: builtin.toReply,
      mockToReply: mock.toReply,
      sessionRssMiB: builtin.rssMiB,
      sessionPssMiB: builtin.pssMiB,
      processes: builtin.processes,
      mockRssMiB: mock.rssMiB,
      mockPssMiB: mock.pssMiB,
    };
  } finally {
    await closeFakeOpenAIs();
  }
}

async function measureSession(samples: number, env: Record<string, string>): Promise<{ toReply: number[]; rssMiB: number; pssMiB: number; processes: number }> {
  const session = await RunnerSession.start({ mode: 'watch', env });
  try {
    const toReply: number[] = [];
    // The first message pays for the first model connection; it is not counted.
    for (let i = -1; i < samples; i++) {
      const { id, at } = session.insertChat(`builtin-${i}-end`);
      await session.until('reply', () => session.hasReplyTo(id));
      if (i >= 0) toReply.push(performance.now() - at);
      await session.until('completed', () => session.isCompleted(id));
    }
    await sleep(IDLE_MS);
    const pids = [session.pid, ...descendants(session.pid)];
    const sum = (read: (pid: number) => number | undefined): number => pids.reduce((total, pid) => total + (read(pid) ?? 0), 0);
    return { toReply, rssMiB: sum(rssMiB), pssMiB: sum(pssMiB), processes: pids.length };
  } finally {
    await session.close();
  }
}
