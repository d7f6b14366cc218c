import type { LaunchedRunner, LaunchOptions, RunnerLauncher } from '../../src/container/types.js';
import { waitFor } from './wait.js';

/**
 * Launch runners through a `RunnerLauncher` with stderr captured, and always end them: `killAllLaunched()` in afterEach
 * kills whatever a test left and reports how many there were (tests assert none).
 */
export interface TrackedRunner {
  handle: LaunchedRunner;
  stderr(): string;
  /** wait until the runner logged `[runner] ready`; throws with its stderr if it ended first. */
  ready(): Promise<void>;
}

const live = new Set<LaunchedRunner>();

export function launchTracked(launcher: RunnerLauncher, options: LaunchOptions): TrackedRunner {
  const handle = launcher.launch({ ...options, stderr: 'pipe' });
  live.add(handle);
  void handle.exited.then(() => live.delete(handle));
  let stderr = '';
  let ended = false;
  void handle.exited.then(() => (ended = true));
  handle.child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return {
    handle,
    stderr: () => stderr,
    ready: async () => {
      await waitFor('runner ready', () => stderr.includes('[runner] ready') || ended, { timeoutMs: 30_000 });
      if (!stderr.includes('[runner] ready')) throw new Error(`runner ended before ready: ${stderr}`);
    },
  };
}

export async function killAllLaunched(): Promise<number> {
  const left = [...live];
  await Promise.all(left.map((handle) => handle.kill()));
  return left.length;
}
