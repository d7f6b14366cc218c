import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CLI_ENTRY } from '../src/shared/cli-entry.js';
import { waitFor } from '../test/support/wait.js';
import { bareNodeMs } from './cold-start.js';
import { cpuTimeMs } from './proc.js';

/**
 * The host's own start: spawn `pincer host` (a fresh home each time, mock provider) → its `[host] ready` line, without
 * a channel and with the HTTP channel (`--http 0`, which also keeps the Prometheus metrics it serves), and the CPU
 * time the process used to get there. The baseline, taking turns with them, is a bare `node -e ''` from spawn to exit:
 * what any Node program pays on this machine at this moment (with the host's environment, not the bench's).
 */
export interface HostStartSamples {
  /** spawn → ready, no channel (ms). */
  none: number[];
  /** spawn → ready with `--http 0` (ms). */
  http: number[];
  /** CPU time (user + system) of the host at ready, no channel and with `--http` (ms, 10 ms resolution). */
  noneCpu: number[];
  httpCpu: number[];
  /** spawn → exit of `node -e ''` (ms). */
  bare: number[];
}

async function hostStart(http: boolean): Promise<{ ms: number; cpuMs: number }> {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-bench-host-start-'));
  const started = performance.now();
  const child = spawn(process.execPath, [CLI_ENTRY, 'host', ...(http ? ['--http', '0'] : [])], {
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      AGENT_PROVIDER: 'mock',
      TZ: 'UTC',
      PINCER_RUNNER: 'process',
      PINCER_HOME: home,
      PINCER_HTTP_TOKEN: 'bench-token-0123456789',
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  try {
    let stderr = '';
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    await waitFor('host ready', () => stderr.includes('[host] ready') || child.exitCode !== null, { timeoutMs: 30_000, intervalMs: 1 });
    if (child.exitCode !== null) throw new Error(`pincer host exited ${child.exitCode}: ${stderr}`);
    const ms = performance.now() - started;
    return { ms, cpuMs: cpuTimeMs(child.pid!) ?? NaN };
  } finally {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
    fs.rmSync(home, { recursive: true, force: true });
  }
}

export async function measureHostStart(samples: number): Promise<HostStartSamples> {
  const result: HostStartSamples = { none: [], http: [], noneCpu: [], httpCpu: [], bare: [] };
  for (let i = 0; i < samples; i++) {
    const none = await hostStart(false);
    const http = await hostStart(true);
    result.bare.push(await bareNodeMs());
    result.none.push(none.ms);
    result.noneCpu.push(none.cpuMs);
    result.http.push(http.ms);
    result.httpCpu.push(http.cpuMs);
  }
  return result;
}
