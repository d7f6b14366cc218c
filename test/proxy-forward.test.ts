import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from './support/wait.js';

/**
 * A sandboxed runner's forward of its loopback port to the host's socket (src/runner/proxy-forward.ts) never keeps
 * the runner alive by itself: a process that made one request through it, whose keep-alive connection the host's
 * side would hold open for two minutes, exits as soon as its own work is done. (An idle connection of the OTLP
 * exporter held every stopped sandboxed runner until the host's grace ran out and SIGKILLed it, losing the spans of
 * its last turn.)
 */
const FORWARD = path.resolve('dist/src/runner/proxy-forward.js');
const closers: (() => void)[] = [];
afterEach(() => {
  for (const close of closers.splice(0)) close();
});

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe("the runner's loopback forward", () => {
  it('lets the process exit with a keep-alive connection still open through it', { timeout: 60_000 }, async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-forward-'));
    const socket = path.join(dir, 'otlp.sock');
    const relay = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
    });
    relay.keepAliveTimeout = 120_000; // the host's side keeps the connection: only the forward can let it go
    await new Promise<void>((resolve) => relay.listen(socket, resolve));
    closers.push(() => {
      relay.closeAllConnections();
      relay.close();
      fs.rmSync(dir, { recursive: true, force: true });
    });
    const port = await freePort();
    const script = `
      const http = await import('node:http');
      const { forwardTraceRelay } = await import(${JSON.stringify(FORWARD)});
      const env = { PINCER_TRACE_RELAY_SOCKET: ${JSON.stringify(socket)}, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://127.0.0.1:${port}/v1/traces' };
      if (!(await forwardTraceRelay(env, (m) => console.error(m)))) throw new Error('no forward');
      const agent = new http.Agent({ keepAlive: true });
      await new Promise((resolve, reject) => {
        const req = http.request('http://127.0.0.1:${port}/v1/traces', { method: 'POST', agent }, (res) => res.resume().on('end', resolve));
        req.on('error', reject);
        req.end('{}');
      });
      console.log('answered');`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    closers.push(() => child.kill('SIGKILL'));
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
    const exit: { code: number | null } = { code: null };
    child.once('exit', (code) => (exit.code = code ?? -1));
    await waitFor('the process to exit', () => exit.code !== null, { timeoutMs: 30_000 });
    expect({ code: exit.code, out: out.trim() }).toEqual({ code: 0, out: 'answered' });
  });
});
