import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { describeIssues } from '../db/content.js';

/**
 * Task pre-scripts: the script of a `task` row runs with bash before the agent is woken. Its
 * last stdout line is `{wakeAgent, data?}`. It runs in its own process group with a timeout that kills the whole
 * group, and with an environment that carries no secrets: only PATH, HOME, TZ, LANG and names explicitly allowed.
 */
export const DEFAULT_SCRIPT_TIMEOUT_MS = 30_000;
const BASE_ENV = ['PATH', 'HOME', 'TZ', 'LANG'];
const MAX_OUTPUT_BYTES = 1024 * 1024;

const ScriptResultSchema = z.object({ wakeAgent: z.boolean(), data: z.unknown().optional() });

export type ScriptOutcome = { ok: true; wakeAgent: boolean; data: unknown } | { ok: false; error: string };

export interface ScriptOptions {
  cwd: string;
  env: NodeJS.ProcessEnv;
  timeoutMs: number;
  /** extra environment variable names the script may see (PINCER_SCRIPT_ENV_ALLOW). */
  allowEnv: readonly string[];
  /** aborting kills the script's process group (the runner is stopping). */
  signal?: AbortSignal;
}

/** The environment a script gets: the base names plus the allowed ones, nothing else. */
export function scriptEnvironment(env: NodeJS.ProcessEnv, allowEnv: readonly string[]): NodeJS.ProcessEnv {
  const clean: NodeJS.ProcessEnv = {};
  for (const name of [...BASE_ENV, ...allowEnv]) if (env[name] !== undefined) clean[name] = env[name];
  return clean;
}

export async function runTaskScript(script: string, options: ScriptOptions): Promise<ScriptOutcome> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-script-'));
  const file = path.join(dir, 'task.sh');
  fs.writeFileSync(file, script, { mode: 0o700 });
  try {
    const run = await spawnGroup(file, options);
    if (run.timedOut) return { ok: false, error: `script timed out after ${options.timeoutMs} ms and was killed` };
    if (run.code !== 0) {
      const tail = lastLines(run.stderr, 3);
      return { ok: false, error: `script exited with ${run.code ?? run.signal}${tail ? `: ${tail}` : ''}` };
    }
    const last = run.stdout.trimEnd().split('\n').pop()?.trim() ?? '';
    if (last === '') return { ok: false, error: 'script printed nothing; its last line must be {"wakeAgent": true|false, "data": …}' };
    let json: unknown;
    try {
      json = JSON.parse(last);
    } catch {
      // the error quotes the line
      return { ok: false, error: `script's last line is not JSON: ${last.slice(0, 200)}` };
    }
    const parsed = ScriptResultSchema.safeParse(json);
    if (!parsed.success) return { ok: false, error: `script's last line is not {wakeAgent, data}: ${describeIssues(parsed.error)}` };
    return { ok: true, wakeAgent: parsed.data.wakeAgent, data: parsed.data.data };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

interface GroupRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
}

/** node:child_process, loaded with the first script: most runners never run one, and it costs ~1 MiB (docs/performance.md). */
let childProcessModule: typeof import('node:child_process') | undefined;

function spawnGroup(file: string, options: ScriptOptions): Promise<GroupRun> {
  childProcessModule ??= createRequire(import.meta.url)('node:child_process') as typeof import('node:child_process');
  const { spawn } = childProcessModule;
  return new Promise((resolve) => {
    const child = spawn('bash', [file], {
      cwd: options.cwd,
      env: scriptEnvironment(options.env, options.allowEnv),
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    const collect = (target: 'out' | 'err') => (chunk: Buffer) => {
      if (target === 'out' && stdout.length < MAX_OUTPUT_BYTES) stdout += chunk.toString('utf8');
      if (target === 'err' && stderr.length < MAX_OUTPUT_BYTES) stderr += chunk.toString('utf8');
    };
    child.stdout.on('data', collect('out'));
    child.stderr.on('data', collect('err'));
    const killGroup = (): void => {
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // the group is already gone
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup();
    }, options.timeoutMs);
    options.signal?.addEventListener('abort', killGroup, { once: true });
    child.on('error', (err) => {
      clearTimeout(timer);
      resolve({ code: 127, signal: null, stdout, stderr: `${stderr}${err.message}`, timedOut });
    });
    child.on('exit', () => {
      clearTimeout(timer);
      // Children the script left in the background go with it (they would also hold its stdout open).
      killGroup();
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', killGroup);
      resolve({ code, signal, stdout, stderr, timedOut });
    });
  });
}

function lastLines(text: string, count: number): string {
  return text.trim().split('\n').slice(-count).join(' | ').slice(0, 300);
}
