import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { LimitedStdioServerTransport, MAX_MESSAGE_BYTES, type OversizedMessage } from '../src/mcp/stdio-transport.js';
import { waitFor } from './support/wait.js';

/**
 * The MCP server's stdio transport over in-memory streams: lines in any chunking, and oversized lines from clients
 * that order their members differently — each refused with an answer to the right id, never closing the connection.
 * (test/mcp-bad-input.e2e.test.ts sends the same through a real `pincer mcp` with the official client.)
 */
const transports: LimitedStdioServerTransport[] = [];
afterEach(async () => {
  for (const t of transports.splice(0)) await t.close();
});

async function open() {
  const stdin = new PassThrough();
  const stdout = new PassThrough();
  const transport = new LimitedStdioServerTransport(stdin, stdout);
  transports.push(transport);
  const received: JSONRPCMessage[] = [];
  const refused: OversizedMessage[] = [];
  const answers: Record<string, unknown>[] = [];
  let closed = false;
  let out = '';
  stdout.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk;
    let end: number;
    while ((end = out.indexOf('\n')) >= 0) {
      answers.push(JSON.parse(out.slice(0, end)) as Record<string, unknown>);
      out = out.slice(end + 1);
    }
  });
  transport.onmessage = (m) => received.push(m);
  transport.onoversized = (m) => refused.push(m);
  transport.onclose = () => (closed = true);
  await transport.start();
  return { stdin, received, refused, answers, closed: () => closed };
}

const big = (n = MAX_MESSAGE_BYTES + 10) => 'z'.repeat(n);

describe('the MCP stdio transport', () => {
  it('delivers messages split across chunks and several in one chunk', async () => {
    const t = await open();
    const a = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });
    const b = JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' });
    t.stdin.write(a.slice(0, 10));
    t.stdin.write(`${a.slice(10)}\n${b}\r\n`);
    await waitFor('two messages', () => t.received.length === 2 || undefined);
    expect(t.received).toEqual([JSON.parse(a), JSON.parse(b)]);
  });

  it.each([
    [
      'id last, as the SDK writes it',
      (text: string) => `{"method":"tools/call","params":{"name":"send_message","arguments":{"text":"${text}"}},"jsonrpc":"2.0","id":7}`,
      7,
    ],
    [
      'id first',
      (text: string) => `{"jsonrpc":"2.0","id":"req-1","method":"tools/call","params":{"name":"send_message","arguments":{"text":"${text}"}}}`,
      'req-1',
    ],
    [
      'a text that ends like an id',
      (text: string) => `{"method":"tools/call","params":{"name":"send_message","arguments":{"text":"${text},\\"id\\":9}"}},"jsonrpc":"2.0","id":3}`,
      3,
    ],
  ])('answers an oversized tool call with %s as a tool error to its id, and serves the next line', async (_name, line, id) => {
    const t = await open();
    const text = big();
    const raw = Buffer.from(`${line(text)}\n`);
    for (let at = 0; at < raw.length; at += 65536) t.stdin.write(raw.subarray(at, at + 65536));
    t.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 8, method: 'ping' })}\n`);
    await waitFor('the answer and the next message', () => (t.answers.length === 1 && t.received.length === 1) || undefined);
    expect(t.answers[0]).toEqual({
      jsonrpc: '2.0',
      id,
      result: {
        isError: true,
        content: [{ type: 'text', text: expect.stringMatching(/^the call to send_message is 1\.0 MiB, over the 1 MiB limit of one MCP message: pass less/) }],
      },
    });
    expect(t.refused).toEqual([{ bytes: raw.length - 1, method: 'tools/call', tool: 'send_message', id }]);
    expect(t.received).toEqual([{ jsonrpc: '2.0', id: 8, method: 'ping' }]);
    expect(t.closed()).toBe(false);
  });

  it('answers another oversized request with a JSON-RPC error, and an oversized notification not at all', async () => {
    const t = await open();
    t.stdin.write(`{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"${big()}"}}\n`);
    t.stdin.write(`{"jsonrpc":"2.0","method":"resources/read","params":{"uri":"${big()}"},"id":12}\n`);
    await waitFor('both refused', () => t.refused.length === 2 || undefined);
    await waitFor('one answer', () => t.answers.length === 1 || undefined);
    expect(t.refused.map((r) => [r.method, r.id])).toEqual([
      ['notifications/message', undefined],
      ['resources/read', 12],
    ]);
    expect(t.answers).toEqual([
      { jsonrpc: '2.0', id: 12, error: { code: -32600, message: expect.stringMatching(/^the resources\/read request is 1\.0 MiB, over the 1 MiB limit/) } },
    ]);
  });
});
