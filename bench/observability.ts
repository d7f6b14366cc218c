import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import type http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { CLI_ENTRY } from '../src/shared/cli-entry.js';
import { startOtlpReceiver } from '../test/support/otlp-receiver.js';
import { waitFor } from '../test/support/wait.js';
import { openStream, post, TOKEN } from './platform.js';

/**
 * What observability costs: a message's round trip through a real `pincer host` (POST → the answer on the SSE
 * stream, mock provider, runner already up) with tracing on (every process exporting OTLP to a loopback receiver)
 * and `/metrics` scraped after every message, against an identical host with neither, in the same run, taking turns.
 */
export interface ObservabilitySamples {
  on: number[];
  off: number[];
}

interface BenchHost {
  child: ChildProcess;
  home: string;
  port: number;
  events: string[];
  stream: http.ClientRequest;
}

async function startBenchHost(env: Record<string, string>): Promise<BenchHost> {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-bench-observability-'));
  const child = spawn(process.execPath, [CLI_ENTRY, 'host', '--http', '0'], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, AGENT_PROVIDER: 'mock', TZ: 'UTC', PINCER_HOME: home, PINCER_HTTP_TOKEN: TOKEN, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const port = await waitFor('host listening', () => Number(/http channel listening on http:\/\/[^:]+:(\d+)/.exec(stderr)?.[1] ?? 0), { timeoutMs: 30_000 });
  const events: string[] = [];
  return { child, home, port, events, stream: openStream(port, 'bench', events) };
}

async function stopBenchHost(host: BenchHost): Promise<void> {
  host.stream.destroy();
  host.child.kill('SIGTERM');
  await new Promise((resolve) => host.child.once('exit', resolve));
  fs.rmSync(host.home, { recursive: true, force: true });
}

export async function measureObservability(messages: number): Promise<ObservabilitySamples> {
  const receiver = await startOtlpReceiver();
  const hosts = await Promise.all([startBenchHost({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url }), startBenchHost({})]);
  const [on, off] = hosts;
  const result: ObservabilitySamples = { on: [], off: [] };
  const once = async (host: BenchHost, i: number, scrape: boolean): Promise<number> => {
    const text = `obsbench${i < 0 ? 'warm' : i}x`;
    const started = performance.now();
    await post(host.port, '/v1/conversations/bench/messages', { text, sender: 'bench' });
    await waitFor(`answer ${i}`, () => host.events.some((e) => e.includes(text)), { timeoutMs: 30_000, intervalMs: 1 });
    const elapsed = performance.now() - started;
    if (scrape) await fetch(`http://127.0.0.1:${host.port}/metrics`).then((res) => res.text());
    return elapsed;
  };
  try {
    await once(on!, -1, true);
    await once(off!, -1, false);
    for (let i = 0; i < messages; i++) {
      result.on.push(await once(on!, i, true));
      result.off.push(await once(off!, i, false));
    }
  } finally {
    await Promise.all(hosts.map(stopBenchHost));
    await receiver.close();
  }
  if (receiver.spans.length === 0) throw new Error('tracing was on but the receiver got no spans');
  return result;
}
