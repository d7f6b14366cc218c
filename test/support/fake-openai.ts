import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { randomUUID } from 'node:crypto';
import { chatBody, chatStart, messageTexts, responsesBody, responsesCreated, type ModelOutput, type WireUsage } from './fake-openai-wire.js';

/**
 * A scripted OpenAI-compatible model server on 127.0.0.1 (port 0) for the Codex and OpenCode providers' end-to-end
 * tests: streaming `POST /v1/responses` (Codex) and streaming `POST /v1/chat/completions` (OpenCode). Each model request
 * takes the next scripted reply (or the default reply); OpenCode's title-generation requests are answered apart, so
 * they never consume the script. Every request is recorded.
 */
export type FakeReply =
  /** the model says `text` (a function gets the request, e.g. to echo the last user message). */
  | { text: string | ((request: RecordedRequest) => string) }
  /** the model calls the MCP tool `tool` of server `server` (default "pincer") with `args`. */
  | { tool: string; server?: string; args: Record<string, unknown> }
  /** the model calls the function named exactly `call` (the built-in runtime's `bash`, `mcp__pincer__send_message`). */
  | { call: string; args: Record<string, unknown> }
  /** the server answers with this HTTP status and an OpenAI-style error body. */
  | { status: number; message?: string }
  /** the stream starts and then goes quiet until the client hangs up (or the server closes). */
  | { stall: true };

export interface RecordedRequest {
  api: 'responses' | 'chat';
  path: string;
  /** the request's headers (to see which key the client presented). */
  headers: http.IncomingHttpHeaders;
  body: Record<string, unknown>;
  /** OpenCode's title generation (answered apart, never scripted). */
  title: boolean;
  /** the text of each user message in the request, oldest first (the conversation history). */
  userTexts: string[];
  /** the text of each system / developer message. */
  systemTexts: string[];
  /** what the server answered. */
  reply: FakeReply | 'title';
  /** Date.now() when the request arrived. */
  at: number;
}

export interface FakeOpenAI {
  /** base URL including `/v1`, e.g. `http://127.0.0.1:45678/v1`. */
  baseUrl: string;
  /** the model name the fake expects (any name is accepted). */
  model: string;
  /** queue replies for the next model requests, in order. */
  script(...replies: FakeReply[]): void;
  /** the reply once the script is used up (default: echo the last user message as `fake: <text>`). */
  setDefault(reply: FakeReply): void;
  /** every request so far, in arrival order. */
  requests: RecordedRequest[];
  /** the model requests (not title generation). */
  modelRequests(): RecordedRequest[];
  /** how many streams are currently stalled. */
  stalled(): number;
  /** the token counts every model reply reports (not title requests); tests of usage set known numbers. */
  usage: WireUsage;
  close(): Promise<void>;
}

const servers = new Set<FakeOpenAI>();

export async function startFakeOpenAI(): Promise<FakeOpenAI> {
  const queue: FakeReply[] = [];
  let fallback: FakeReply = { text: (request) => `fake: ${lastLine(request.userTexts.at(-1) ?? '')}` };
  const requests: RecordedRequest[] = [];
  const sockets = new Set<Socket>();
  let stalledCount = 0;

  const server = http.createServer((req, res) => {
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (raw += chunk));
    req.on('end', () => {
      const path = (req.url ?? '').split('?')[0] ?? '';
      const api = path.endsWith('/responses') ? 'responses' : path.endsWith('/chat/completions') ? 'chat' : null;
      if (req.method !== 'POST' || !api) {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: `fake-openai: no route ${req.method} ${path}`, type: 'not_found' } }));
        return;
      }
      let body: Record<string, unknown>;
      try {
        body = JSON.parse(raw) as Record<string, unknown>;
      } catch {
        res.writeHead(400).end();
        return;
      }
      const systemTexts = [...messageTexts(body, 'system'), ...messageTexts(body, 'developer')];
      const title = api === 'chat' && isTitleRequest(body, systemTexts);
      const reply: FakeReply | 'title' = title ? 'title' : (queue.shift() ?? fallback);
      const request: RecordedRequest = {
        api,
        path,
        headers: req.headers,
        body,
        title,
        userTexts: messageTexts(body, 'user'),
        systemTexts,
        reply,
        at: Date.now(),
      };
      requests.push(request);
      answer(request, res);
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });

  function answer(request: RecordedRequest, res: http.ServerResponse): void {
    const model = typeof request.body.model === 'string' ? request.body.model : 'fake-model';
    const reply = request.reply;
    if (reply !== 'title' && 'status' in reply) {
      res.writeHead(reply.status, { 'content-type': 'application/json' });
      const type = reply.status >= 500 ? 'server_error' : 'invalid_request_error';
      res.end(JSON.stringify({ error: { message: reply.message ?? `fake-openai: HTTP ${reply.status}`, type, code: null } }));
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    const id = request.api === 'responses' ? `resp_${randomUUID()}` : `chatcmpl-${randomUUID()}`;
    res.write(request.api === 'responses' ? responsesCreated(id) : chatStart(id, model));
    if (reply !== 'title' && 'stall' in reply) {
      stalledCount += 1;
      res.once('close', () => (stalledCount -= 1));
      return;
    }
    const output: ModelOutput =
      reply === 'title'
        ? { text: 'Fake title' }
        : 'text' in reply
          ? { text: typeof reply.text === 'function' ? reply.text(request) : reply.text }
          : 'call' in reply
            ? { call: reply.call, args: reply.args }
            : { tool: reply.tool, server: reply.server ?? 'pincer', args: reply.args };
    const tokens = reply === 'title' ? undefined : fake.usage;
    res.end(request.api === 'responses' ? responsesBody(id, output, tokens) : chatBody(id, model, output, tokens));
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const fake: FakeOpenAI = {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    model: 'fake-model',
    script: (...replies) => queue.push(...replies),
    setDefault: (reply) => (fallback = reply),
    requests,
    modelRequests: () => requests.filter((request) => !request.title),
    stalled: () => stalledCount,
    usage: { input: 10, cached: 0, output: 5 },
    close: async () => {
      servers.delete(fake);
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  servers.add(fake);
  return fake;
}

/** Close every fake server a test left open (afterEach). */
export async function closeFakeOpenAIs(): Promise<void> {
  await Promise.all([...servers].map((fake) => fake.close()));
}

/** A loopback URL where nothing listens: a port that was just bound and released. */
export async function unreachableBaseUrl(): Promise<string> {
  const probe = http.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return `http://127.0.0.1:${port}/v1`;
}

/**
 * OpenCode asks for a session title in a separate request without tools whose system prompt is about titles. It is
 * answered apart so it never takes a scripted reply.
 */
function isTitleRequest(body: Record<string, unknown>, systemTexts: string[]): boolean {
  const hasTools = Array.isArray(body.tools) && body.tools.length > 0;
  return !hasTools && systemTexts.some((text) => /\btitle\b/i.test(text));
}

function lastLine(text: string): string {
  const lines = text.trim().split('\n');
  return lines.at(-1) ?? '';
}
