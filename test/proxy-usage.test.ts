import http from 'node:http';
import { Readable } from 'node:stream';
import zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { isModelCall, ResponseUsageTap, withStreamUsage } from '../src/host/proxy-meter.js';
import { SseLines, UsageReader, type ProxyApi } from '../src/host/proxy-usage.js';

/** The usage fields each upstream API reports, read as the credential proxy reads them (src/host/proxy-usage.ts). */
const sse = (events: [string | undefined, unknown][]): string =>
  events.map(([event, data]) => `${event ? `event: ${event}\n` : ''}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`).join('');

/** A response as the proxy gets it from upstream: headers and a body in chunks of `size` bytes. */
function fakeResponse(headers: http.IncomingHttpHeaders, body: Buffer): http.IncomingMessage {
  const res = Readable.from([body]) as unknown as http.IncomingMessage;
  res.headers = headers;
  return res;
}

async function tapped(api: ProxyApi, contentType: string, body: string | Buffer, chunk = 7, encoding?: string) {
  const bytes = Buffer.isBuffer(body) ? body : Buffer.from(body);
  const tap = new ResponseUsageTap(api, fakeResponse({ 'content-type': contentType, ...(encoding ? { 'content-encoding': encoding } : {}) }, bytes));
  for (let i = 0; i < bytes.length; i += chunk) tap.write(bytes.subarray(i, i + chunk));
  return tap.end();
}

const anthropicStream = sse([
  [
    'message_start',
    {
      type: 'message_start',
      message: { model: 'claude-sonnet-4-5', usage: { input_tokens: 1200, output_tokens: 1, cache_read_input_tokens: 500, cache_creation_input_tokens: 70 } },
    },
  ],
  ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'héllo "usage": {"input_tokens": 9}' } }],
  ['message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 34 } }],
  ['message_stop', { type: 'message_stop' }],
]);

const chatStream = sse([
  [undefined, { object: 'chat.completion.chunk', model: 'gpt-5', choices: [{ delta: { content: 'hi' } }], usage: null }],
  [
    undefined,
    {
      object: 'chat.completion.chunk',
      model: 'gpt-5',
      choices: [],
      usage: { prompt_tokens: 1500, completion_tokens: 42, prompt_tokens_details: { cached_tokens: 300 } },
    },
  ],
  [undefined, '[DONE]'],
]);

const responsesStream = sse([
  ['response.created', { type: 'response.created', response: { model: 'gpt-5', usage: null } }],
  ['response.output_text.delta', { type: 'response.output_text.delta', delta: 'hi' }],
  [
    'response.completed',
    {
      type: 'response.completed',
      response: { model: 'gpt-5-mini', usage: { input_tokens: 900, input_tokens_details: { cached_tokens: 100 }, output_tokens: 25 } },
    },
  ],
]);

describe('usage fields of the upstream APIs', () => {
  it.each([
    [
      'Anthropic SSE',
      'anthropic',
      'text/event-stream',
      anthropicStream,
      { model: 'claude-sonnet-4-5', inputTokens: 1200, outputTokens: 34, cacheReadTokens: 500, cacheWriteTokens: 70 },
    ],
    [
      'Anthropic JSON',
      'anthropic',
      'application/json',
      JSON.stringify({ type: 'message', model: 'claude-haiku-4-5', usage: { input_tokens: 10, output_tokens: 5 } }),
      { model: 'claude-haiku-4-5', inputTokens: 10, outputTokens: 5, cacheReadTokens: 0, cacheWriteTokens: 0 },
    ],
    [
      'Chat Completions SSE',
      'openai',
      'text/event-stream',
      chatStream,
      { model: 'gpt-5', inputTokens: 1200, outputTokens: 42, cacheReadTokens: 300, cacheWriteTokens: 0 },
    ],
    [
      'Chat Completions JSON',
      'openai',
      'application/json; charset=utf-8',
      JSON.stringify({ object: 'chat.completion', model: 'gpt-4o', usage: { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 } }),
      { model: 'gpt-4o', inputTokens: 7, outputTokens: 3, cacheReadTokens: 0, cacheWriteTokens: 0 },
    ],
    [
      'Responses SSE',
      'openai',
      'text/event-stream',
      responsesStream,
      { model: 'gpt-5-mini', inputTokens: 800, outputTokens: 25, cacheReadTokens: 100, cacheWriteTokens: 0 },
    ],
    [
      'Responses JSON',
      'openai',
      'application/json',
      JSON.stringify({ object: 'response', model: 'o3', usage: { input_tokens: 50, input_tokens_details: { cached_tokens: 20 }, output_tokens: 8 } }),
      { model: 'o3', inputTokens: 30, outputTokens: 8, cacheReadTokens: 20, cacheWriteTokens: 0 },
    ],
  ] as const)('%s', async (_name, api, type, body, expected) => {
    expect(await tapped(api, type, body)).toEqual(expected);
    expect(await tapped(api, type, body, 1)).toEqual(expected); // byte by byte: split lines and split characters
  });

  it('a compressed body is read (gzip, br); an encoding zlib does not know gives no usage', async () => {
    const body = JSON.stringify({ model: 'gpt-4o', usage: { prompt_tokens: 7, completion_tokens: 3 } });
    expect(await tapped('openai', 'application/json', zlib.gzipSync(body), 5, 'gzip')).toMatchObject({ inputTokens: 7, outputTokens: 3 });
    expect(await tapped('openai', 'application/json', zlib.brotliCompressSync(body), 5, 'br')).toMatchObject({ inputTokens: 7 });
    expect(await tapped('openai', 'application/json', Buffer.from(body), 5, 'zstd')).toBeUndefined();
  });

  it('an answer without usage (an error, a chat stream that was not asked for it, a cut stream) reports none', async () => {
    expect(await tapped('anthropic', 'application/json', JSON.stringify({ type: 'error', error: { type: 'overloaded_error' } }))).toBeUndefined();
    expect(await tapped('openai', 'text/event-stream', chatStream.split('\n\n')[0]!)).toBeUndefined();
    expect(await tapped('anthropic', 'text/event-stream', anthropicStream.slice(0, anthropicStream.indexOf('message_delta')))).toMatchObject({
      inputTokens: 1200,
      outputTokens: 1,
    });
    expect(await tapped('openai', 'text/html', '<html>bad gateway</html>')).toBeUndefined();
  });

  it('numbers that are not counts are left out; huge ones are capped', () => {
    const reader = new UsageReader('anthropic');
    reader.absorb({ model: 'm', usage: { input_tokens: -5, output_tokens: 'many', cache_read_input_tokens: 1e300 } });
    expect(reader.result()).toEqual({ model: 'm', inputTokens: 0, outputTokens: 0, cacheReadTokens: 10_000_000_000, cacheWriteTokens: 0 });
  });

  it('an SSE line past the cap is skipped without holding it', () => {
    const seen: unknown[] = [];
    const lines = new SseLines((v) => seen.push(v), 100);
    lines.push(`data: {"usage":{"x":1},"pad":"${'a'.repeat(500)}`);
    lines.push(`${'a'.repeat(500)}"}\ndata: {"usage":{"input_tokens":3}}\n`);
    lines.end();
    expect(seen).toEqual([{ usage: { input_tokens: 3 } }]);
  });
});

describe('what the proxy meters and rewrites', () => {
  it.each([
    ['anthropic', 'POST', '/v1/messages', true],
    ['anthropic', 'POST', '/v1/messages/count_tokens', false],
    ['anthropic', 'GET', '/v1/models', false],
    ['openai', 'POST', '/v1/chat/completions', true],
    ['openai', 'POST', '/v1/responses', true],
    ['openai', 'POST', '/v1/embeddings', true],
    ['openai', 'GET', '/v1/responses', false],
  ] as const)('%s %s %s: a model call %s', (api, method, path, expected) => {
    expect(isModelCall(api, method, path)).toBe(expected);
  });

  it('a streaming chat request is made to ask for usage; others pass unchanged', () => {
    const asked = JSON.parse(withStreamUsage(Buffer.from(JSON.stringify({ model: 'm', stream: true, stream_options: { other: 1 } }))).toString());
    expect(asked.stream_options).toEqual({ other: 1, include_usage: true });
    const plain = Buffer.from(JSON.stringify({ model: 'm' }));
    expect(withStreamUsage(plain)).toBe(plain);
    const notJson = Buffer.from('{nope');
    expect(withStreamUsage(notJson)).toBe(notJson);
  });
});
