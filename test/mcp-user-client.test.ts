import { getEventListeners } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { AgentTool } from '@mariozechner/pi-agent-core';
import { MCP_SETTING_DEFAULTS, type McpClientSettings } from '../src/providers/mcp-settings.js';
import { McpConnections } from '../src/providers/pincer/mcp-tools.js';
import type { McpServerConfig } from '../src/providers/types.js';
import { createLogger } from '../src/shared/log.js';
import { waitFor } from './support/wait.js';

/**
 * The built-in runtime's client of the user's MCP servers, in process, against real servers: the registry's
 * server-everything and server-memory, and the misbehaving server of test/support/. Each failure is checked for what
 * the chat (notices) and the model (tool results and errors) see.
 */
const MISBEHAVING = path.resolve('test/support/misbehaving-mcp-server.mjs');
const serverBin = (name: string): string => path.resolve(`node_modules/@modelcontextprotocol/${name}/dist/index.js`);
const env = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' };
const node = (script: string, extra: Record<string, string> = {}, args: string[] = []): McpServerConfig => ({
  command: process.execPath,
  args: [script, ...args],
  env: { ...env, ...extra },
});

const open: McpConnections[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((c) => c.close()));
});

async function connect(servers: Record<string, McpServerConfig>, settings: Partial<McpClientSettings> = {}): Promise<McpConnections> {
  const connections = await McpConnections.connect(
    servers,
    {},
    {
      settings: { ...MCP_SETTING_DEFAULTS, startMs: 20_000, ...settings },
      maxOutputChars: 30_000,
      log: createLogger('test'),
    },
  );
  open.push(connections);
  return connections;
}

const tool = (connections: McpConnections, name: string): AgentTool => {
  const found = connections.tools().find((t) => t.name === name);
  if (!found)
    throw new Error(
      `no tool ${name} (have ${connections
        .tools()
        .map((t) => t.name)
        .join(', ')})`,
    );
  return found;
};
const textOf = (result: { content: { type: string; text?: string }[] }): string => result.content.map((c) => c.text ?? `<${c.type}>`).join('\n');

describe("the built-in runtime's client of the user's MCP servers", { timeout: 90_000 }, () => {
  it('starts the registry servers in parallel and calls their tools under mcp__<server>__<tool>', async () => {
    const memoryFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-mcp-memory-')), 'memory.jsonl');
    const connections = await connect({
      everything: node(serverBin('server-everything'), {}, ['stdio']),
      memory: node(serverBin('server-memory'), { MEMORY_FILE_PATH: memoryFile }),
    });
    expect(connections.takeNotices()).toEqual([]);
    const echo = await tool(connections, 'mcp__everything__echo').execute('1', { message: 'hello' });
    expect(textOf(echo)).toContain('hello');
    await tool(connections, 'mcp__memory__create_entities').execute('2', { entities: [{ name: 'Ada', entityType: 'person', observations: ['likes tea'] }] });
    const graph = await tool(connections, 'mcp__memory__read_graph').execute('3', {});
    expect(textOf(graph)).toContain('likes tea');
  });

  it('gives the model every content type: text, images within the cap, audio as a note, resources, links, structured content', async () => {
    const connections = await connect({ odd: node(MISBEHAVING), everything: node(serverBin('server-everything'), {}, ['stdio']) });
    const contents = await tool(connections, 'mcp__odd__contents').execute('1', {});
    expect(contents.content).toEqual([
      { type: 'text', text: 'plain text' },
      { type: 'image', data: expect.any(String), mimeType: 'image/png' },
      { type: 'text', text: '[image image/png of 6.0 MiB left out: over the 5.0 MiB limit for images]' },
      { type: 'text', text: '[audio audio/wav, 2.9 KiB: audio is not passed to the model]' },
      { type: 'text', text: '[resource file:///notes/today.md (text/markdown)]\n# Today\nbuy milk' },
      { type: 'text', text: '[resource file:///data.bin (application/octet-stream)] 2.0 KiB of binary data, not shown' },
      { type: 'text', text: '[resource link: https://example.invalid/report.pdf "report" (application/pdf) — the monthly report]' },
    ]);
    const structured = await tool(connections, 'mcp__odd__structured').execute('2', {});
    expect(JSON.parse(textOf(structured))).toEqual({ temperature: 21.5, unit: 'C' });
    // the registry's server: a resource link, and structured content next to its text
    const links = await tool(connections, 'mcp__everything__get-resource-links').execute('3', { count: 2 });
    expect(textOf(links)).toMatch(/\[resource link: \S+/);
    const weather = await tool(connections, 'mcp__everything__get-structured-content').execute('4', { location: 'New York' });
    expect(textOf(weather)).toContain('temperature');
  });

  it('a result over the limit is a tool error naming it, and the connection goes on serving', async () => {
    const connections = await connect({ odd: node(MISBEHAVING) });
    await expect(tool(connections, 'mcp__odd__big').execute('1', { bytes: 11 * 1024 * 1024 })).rejects.toThrow(
      /the result is 11\.0 MiB, over the 10\.0 MiB limit of one MCP message/,
    );
    const echo = await tool(connections, 'mcp__odd__echo').execute('2', { text: 'still here' });
    expect(textOf(echo)).toMatch(/^echo: still here \(pid \d+, call 1\)$/);
  });

  it('a hung call fails with a tool error after the call timeout; the server serves the next call', async () => {
    const connections = await connect({ odd: node(MISBEHAVING) }, { callMs: 1500 });
    await expect(tool(connections, 'mcp__odd__hang').execute('1', {})).rejects.toThrow('odd hang did not answer within 1.5 s and was cancelled');
    expect(textOf(await tool(connections, 'mcp__odd__echo').execute('2', { text: 'after' }))).toContain('echo: after');
  });

  it('a connection dropped mid-call fails that call saying so, and the server is restarted for the next one', async () => {
    const connections = await connect({ odd: node(MISBEHAVING) });
    const first = textOf(await tool(connections, 'mcp__odd__echo').execute('1', { text: 'one' }));
    await expect(tool(connections, 'mcp__odd__drop').execute('2', {})).rejects.toThrow(
      'the MCP server odd stopped during the call to drop (its last stderr line: "misbehaving: dropping the connection"); it is restarted for the next call',
    );
    const again = textOf(await tool(connections, 'mcp__odd__echo').execute('3', { text: 'two' }));
    const pid = (text: string): string => /pid (\d+)/.exec(text)![1]!;
    expect(again).toContain('echo: two');
    expect(pid(again)).not.toBe(pid(first));
  });

  it('a server that crashes at start, or never starts, is left out with one notice each; the others serve at once', async () => {
    const started = Date.now();
    const connections = await connect(
      {
        crash: node(MISBEHAVING, { MISBEHAVE: 'crash-at-start' }),
        hang: node(MISBEHAVING, { MISBEHAVE: 'hang-at-start' }),
        missing: { command: '/nonexistent/mcp-server', args: [], env },
        odd: node(MISBEHAVING),
      },
      { startMs: 10_000 },
    );
    expect(Date.now() - started).toBeLessThan(60_000); // the SDK's own request timeout: the deadline, not that, ended the wait
    const notices = connections.takeNotices();
    expect(notices).toHaveLength(3);
    expect(notices).toEqual(
      expect.arrayContaining([
        'The MCP server "crash" could not start: it exited before it was ready (its stderr: "misbehaving: cannot open /nonexistent/state.db"). This turn goes on without its tools.',
        // (on a loaded machine the server may not have written its line yet when the deadline comes)
        expect.stringMatching(
          /^The MCP server "hang" did not start within 10 s; this turn goes on without its tools( \(the first line of its stderr: "misbehaving: waiting for a lock that never comes"\))?\.$/,
        ),
        expect.stringMatching(/^The MCP server "missing" could not start: command not found/),
      ]),
    );
    expect(connections.takeNotices()).toEqual([]); // each is given once
    expect(connections.tools().map((t) => t.name)).toContain('mcp__odd__echo');
    expect(connections.tools().some((t) => t.name.startsWith('mcp__hang__') || t.name.startsWith('mcp__crash__'))).toBe(false);
  });

  it('many calls on one turn signal leave no abort listener behind (no MaxListenersExceededWarning)', async () => {
    const connections = await connect({ odd: node(MISBEHAVING) });
    const warnings: Error[] = [];
    const onWarning = (w: Error): void => void warnings.push(w);
    process.on('warning', onWarning);
    try {
      const turn = new AbortController();
      for (let i = 0; i < 25; i++) await tool(connections, 'mcp__odd__echo').execute(String(i), { text: `n${i}` }, turn.signal);
      expect(getEventListeners(turn.signal, 'abort')).toHaveLength(0);
      // an aborted turn cancels the call in flight
      const hanging = tool(connections, 'mcp__odd__hang').execute('h', {}, turn.signal);
      await waitFor('the call in flight', () => getEventListeners(turn.signal, 'abort').length === 1);
      turn.abort(new Error('turn stopped'));
      await expect(hanging).rejects.toThrow();
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([]);
  });
});
