import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/**
 * A scripted fake of the Anthropic Messages API on 127.0.0.1, good enough for the real Claude Code CLI (which calls
 * only `POST /v1/messages?beta=true` with `stream: true`, SSE). Each request takes the next scripted step: text, a
 * `tool_use` of a named tool, an HTTP error status, a stall that never answers, a reply held until the test lets it
 * go, or a function of the request. When the script is empty it answers `defaultText`. Every request is recorded,
 * parsed, so tests can assert what the model was sent (system prompt, history on resume, tool results).
 *
 * Not a mock of the SDK: the real SDK and binary talk HTTP to it exactly as they would to the real API.
 */
export type FakeReply =
  /** answer with text (end_turn). */
  | { text: string }
  /** call a tool (stop_reason tool_use); `text` is said before the call. The CLI sends the result in a new request. */
  | { toolUse: { name: string; input: Record<string, unknown> }; text?: string }
  /** fail with this HTTP status and an Anthropic-shaped error body (and extra response headers). */
  | { status: number; message?: string; headers?: Record<string, string> }
  /** accept the request and never answer (until the server closes). */
  | { stall: true }
  /** hold the request until `until` resolves, then answer with `then` (a turn the test keeps running). */
  | { until: Promise<unknown>; then: FakeReply };

/** A scripted step: a reply, or a function of the request (e.g. to use an id a tool returned). */
export type FakeStep = FakeReply | ((request: FakeRequest) => FakeReply);

export interface FakeMessage {
  role: string;
  content: string | FakeBlock[];
}

export interface FakeBlock {
  type: string;
  text?: string;
  name?: string;
  input?: unknown;
  tool_use_id?: string;
  content?: unknown;
  source?: { type: string; media_type?: string; data?: string };
}

export interface FakeRequest {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: {
    model?: string;
    stream?: boolean;
    system?: string | { type: string; text: string }[];
    messages?: FakeMessage[];
    tools?: { name: string }[];
  };
  /** the system prompt as one string. */
  system: string;
  /** all text of the last `role: user` message (text blocks and tool results). */
  lastUserText: string;
  /** every text in every message, joined (to look for history). */
  allText: string;
  /** the tool names offered to the model. */
  toolNames: string[];
  /** the reply this request got. */
  reply?: FakeReply;
  /** when the request arrived (Date.now()). */
  receivedAt: number;
}

export interface FakeUsage {
  input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens?: number;
  cache_creation_input_tokens?: number;
}

export interface FakeAnthropic {
  /** `http://127.0.0.1:PORT`, for ANTHROPIC_BASE_URL. */
  url: string;
  requests: FakeRequest[];
  /** queue replies, taken one per request in order. */
  script(...steps: FakeStep[]): void;
  /** what a request gets when the script is empty. */
  defaultText: string;
  /** the usage every reply reports (the API's field names); tests of usage set known numbers here. */
  usage: FakeUsage;
  /** errors thrown by scripted steps (the request got HTTP 500); `cleanupClaude` fails the test on any. */
  stepErrors: Error[];
  /** requests that were sent messages (the model calls). */
  modelRequests(): FakeRequest[];
  /** stop listening and cut every open connection (stalled ones too). */
  close(): Promise<void>;
}

export async function startFakeAnthropic(): Promise<FakeAnthropic> {
  const steps: FakeStep[] = [];
  const requests: FakeRequest[] = [];
  const sockets = new Set<Socket>();

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const request = parseRequest(req, Buffer.concat(chunks).toString('utf8'));
      requests.push(request);
      if (!request.path.startsWith('/v1/messages') || request.path.startsWith('/v1/messages/count_tokens')) {
        // Anything else Claude Code might ask (token counting, …) gets a harmless answer, and is recorded.
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ input_tokens: 10 }));
        return;
      }
      let reply: FakeReply;
      try {
        const step = steps.shift();
        reply = (typeof step === 'function' ? step(request) : step) ?? { text: fake.defaultText };
      } catch (err) {
        fake.stepErrors.push(err instanceof Error ? err : new Error(String(err)));
        reply = { status: 500, message: `scripted step failed: ${String(err)}` };
      }
      request.reply = reply;
      answer(res, request, reply, fake.usage);
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  const fake: FakeAnthropic = {
    url: `http://127.0.0.1:${port}`,
    requests,
    defaultText: 'ok',
    usage: { input_tokens: 10, output_tokens: 5 },
    stepErrors: [],
    script: (...more) => void steps.push(...more),
    modelRequests: () => requests.filter((r) => r.path.startsWith('/v1/messages') && (r.body.messages?.length ?? 0) > 0),
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return fake;
}

function parseRequest(req: http.IncomingMessage, raw: string): FakeRequest {
  let body: FakeRequest['body'] = {};
  try {
    body = JSON.parse(raw) as FakeRequest['body'];
  } catch {
    // not JSON (a GET, say): keep an empty body
  }
  const messages = body.messages ?? [];
  const system = typeof body.system === 'string' ? body.system : (body.system ?? []).map((b) => b.text).join('\n');
  const lastUser = [...messages].reverse().find((m) => m.role === 'user');
  return {
    path: req.url ?? '',
    headers: req.headers,
    body,
    system,
    lastUserText: lastUser ? messageText(lastUser) : '',
    allText: messages.map(messageText).join('\n'),
    toolNames: (body.tools ?? []).map((t) => t.name),
    receivedAt: Date.now(),
  };
}

function messageText(message: FakeMessage): string {
  if (typeof message.content === 'string') return message.content;
  return message.content.map(blockText).join('\n');
}

function blockText(block: FakeBlock): string {
  if (block.type === 'text') return block.text ?? '';
  if (block.type === 'tool_result') {
    if (typeof block.content === 'string') return block.content;
    if (Array.isArray(block.content)) return (block.content as FakeBlock[]).map(blockText).join('\n');
  }
  return '';
}

const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  429: 'rate_limit_error',
  500: 'api_error',
  529: 'overloaded_error',
};

function answer(res: http.ServerResponse, request: FakeRequest, reply: FakeReply, usage: FakeUsage): void {
  if ('stall' in reply) return; // the socket stays open until the client gives up or the server closes
  if ('until' in reply) {
    void reply.until.then(() => {
      if (!res.destroyed) answer(res, request, reply.then, usage);
    });
    return;
  }
  if ('status' in reply) {
    const type = ERROR_TYPES[reply.status] ?? 'api_error';
    res
      .writeHead(reply.status, { 'content-type': 'application/json', 'request-id': `req_${randomUUID()}`, ...reply.headers })
      .end(JSON.stringify({ type: 'error', error: { type, message: reply.message ?? `fake ${type}` } }));
    return;
  }
  const blocks: Record<string, unknown>[] = [];
  const text = 'text' in reply ? reply.text : undefined;
  if (text) blocks.push({ type: 'text', text });
  if ('toolUse' in reply) {
    blocks.push({ type: 'tool_use', id: `toolu_${randomUUID().replace(/-/g, '')}`, ...reply.toolUse });
  }
  const stopReason = 'toolUse' in reply ? 'tool_use' : 'end_turn';
  const message = {
    id: `msg_${randomUUID().replace(/-/g, '')}`,
    type: 'message',
    role: 'assistant',
    model: request.body.model ?? 'fake-model',
    content: [] as unknown[],
    stop_reason: null,
    stop_sequence: null,
    usage: { ...usage, output_tokens: 1 },
  };
  if (!request.body.stream) {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ ...message, content: blocks, stop_reason: stopReason, usage }));
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'request-id': `req_${randomUUID()}` });
  const send = (event: string, data: Record<string, unknown>): void => {
    res.write(`event: ${event}\ndata: ${JSON.stringify({ type: event, ...data })}\n\n`);
  };
  send('message_start', { message });
  blocks.forEach((block, index) => {
    if (block.type === 'text') {
      send('content_block_start', { index, content_block: { type: 'text', text: '' } });
      send('content_block_delta', { index, delta: { type: 'text_delta', text: block.text } });
    } else {
      send('content_block_start', { index, content_block: { ...block, input: {} } });
      send('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: JSON.stringify(block.input) } });
    }
    send('content_block_stop', { index });
  });
  send('message_delta', { delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: usage.output_tokens } });
  send('message_stop', {});
  res.end();
}
