import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { bwrapArgs } from '../src/container/bwrap.js';
import { sandboxEnvironment } from '../src/container/env.js';
import { resolveFolders } from '../src/container/workspace.js';
import { otlpHeaders, TraceRelay } from '../src/host/trace-relay.js';
import { createLogger } from '../src/shared/log.js';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * The OTLP relay a sandboxed runner exports its spans to: it passes trace exports on to the host's collector with the
 * host's headers, over its loopback port and over the Unix socket bound into sandboxes, and takes nothing else.
 */
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

async function collector(): Promise<{ url: string; received: Received[] }> {
  const received: Received[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8').on('data', (c: string) => (body += c));
    req.on('end', () => {
      received.push({ path: req.url ?? '', headers: req.headers, body });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(() => new Promise((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received };
}

function post(target: { port: number } | { socketPath: string }, urlPath: string, body: string, method = 'POST'): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { ...('port' in target ? { host: '127.0.0.1', port: target.port } : target), path: urlPath, method, headers: { 'content-type': 'application/json' } },
      (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function relayTo(env: NodeJS.ProcessEnv): Promise<TraceRelay> {
  const relay = TraceRelay.fromEnvironment(env, createLogger('test'))!;
  expect(relay).toBeDefined();
  await relay.start();
  closers.push(() => relay.stop());
  return relay;
}

describe('the trace relay', () => {
  it('passes trace exports on to the collector with the host headers, over its port and its socket', async () => {
    const otlp = await collector();
    const relay = await relayTo({ OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_EXPORTER_OTLP_HEADERS: 'Authorization=Bearer%20collector-key,x-tenant=t1' });
    expect(await post({ port: relay.port() }, '/v1/traces', '{"resourceSpans":[1]}')).toEqual({ status: 200, text: '{}' });
    expect(await post({ socketPath: relay.socketPath()! }, '/v1/traces', '{"resourceSpans":[2]}')).toEqual({ status: 200, text: '{}' });
    expect(otlp.received.map((r) => [r.path, r.body, r.headers.authorization, r.headers['x-tenant']])).toEqual([
      ['/v1/traces', '{"resourceSpans":[1]}', 'Bearer collector-key', 't1'],
      ['/v1/traces', '{"resourceSpans":[2]}', 'Bearer collector-key', 't1'],
    ]);
  });

  it.each([
    ['GET', '/v1/traces'],
    ['POST', '/v1/metrics'],
    ['POST', '/admin'],
  ])('refuses %s %s with 404 and sends nothing on', async (method, urlPath) => {
    const otlp = await collector();
    const relay = await relayTo({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${otlp.url}/v1/traces` });
    expect((await post({ port: relay.port() }, urlPath, '{}', method)).status).toBe(404);
    expect(otlp.received).toEqual([]);
  });

  it('answers 502 when the collector is down, and is absent when tracing is off', async () => {
    const relay = await relayTo({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:1' });
    const answer = await post({ port: relay.port() }, '/v1/traces', '{}');
    expect(answer.status).toBe(502);
    expect(answer.text).toContain('collector unreachable');
    expect(TraceRelay.fromEnvironment({}, createLogger('test'))).toBeUndefined();
    expect(TraceRelay.fromEnvironment({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x', OTEL_SDK_DISABLED: 'true' }, createLogger('test'))).toBeUndefined();
  });

  it('reads OTLP header lists as the SDK does (the traces list wins; a malformed pair is left out)', () => {
    expect(otlpHeaders({ OTEL_EXPORTER_OTLP_HEADERS: 'A=1,b=two%20words,bad,=x', OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'a=3,c=%zz' })).toEqual({
      a: '3',
      b: 'two words',
    });
  });

  it('a sandbox gets the relay on its loopback and the socket bound read-only; never the host collector or its headers', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-relay-'));
    closers.push(async () => fs.rmSync(dir, { recursive: true, force: true }));
    const workspace = path.join(dir, 'session');
    const relayDir = path.join(dir, 'otlp');
    fs.mkdirSync(workspace);
    fs.mkdirSync(relayDir);
    const options = {
      workspace,
      env: { AGENT_PROVIDER: 'mock', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_EXPORTER_OTLP_HEADERS: 'authorization=secret' },
      traceRelay: { socket: path.join(relayDir, 'otlp.sock'), port: 43210 },
    };
    const env = sandboxEnvironment(options);
    expect(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT).toBe('http://127.0.0.1:43210/v1/traces');
    expect(env.PINCER_TRACE_RELAY_SOCKET).toBe('/run/pincer-otlp/otlp.sock');
    expect(env.OTEL_EXPORTER_OTLP_ENDPOINT).toBeUndefined();
    expect(JSON.stringify(env)).not.toContain('secret');
    const args = bwrapArgs(
      { appRoot: process.cwd(), node: process.execPath, isolateNetwork: true, extraEnv: [] },
      resolveFolders(options),
      path.join(process.cwd(), 'dist/src/cli/main.js'),
    );
    const at = args.indexOf('/run/pincer-otlp');
    expect(args.slice(at - 2, at + 1)).toEqual(['--ro-bind', fs.realpathSync(relayDir), '/run/pincer-otlp']);
  });
});
