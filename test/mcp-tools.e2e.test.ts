import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { OutboundRow } from '../src/db/types.js';
import { closeAllMcpClients, putBatchInFlight, startMcpClient } from './support/mcp-client.js';
import { cleanupSessions, createTestSession, type TestSession } from './support/session.js';

/** The conversation, file and agent tools, driven through the real `pincer mcp` process by the official client. */
afterEach(async () => {
  expect(await closeAllMcpClients()).toBe(0);
  cleanupSessions();
});

const ALL_TOOLS = [
  'add_mcp_server',
  'add_reaction',
  'ask_user_question',
  'cancel_task',
  'edit_message',
  'list_tasks',
  'pause_task',
  'register_agent_group',
  'resume_task',
  'schedule_task',
  'send_card',
  'send_file',
  'send_message',
  'send_to_agent',
  'update_task',
];

function lastOut(s: TestSession): OutboundRow {
  const rows = s.outbound();
  return rows[rows.length - 1]!;
}

function content(row: OutboundRow): Record<string, unknown> {
  return JSON.parse(row.content) as Record<string, unknown>;
}

/** A session with a chat message from Slack in flight, and a client on it. */
async function inFlight(env: Record<string, string> = {}) {
  const s = createTestSession();
  const msg = s.chat('hello', { platformId: 'C1', channelType: 'slack', threadId: 'T1' });
  putBatchInFlight(s.db, msg.id);
  const mcp = await startMcpClient(s.paths.root, env);
  return { s, msg, mcp };
}

describe('pincer mcp: the server', () => {
  it('is named pincer and lists every documented tool, each with a description', async () => {
    const s = createTestSession();
    const mcp = await startMcpClient(s.paths.root);
    expect(mcp.client.getServerVersion()?.name).toBe('pincer');
    const { tools } = await mcp.client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(ALL_TOOLS);
    for (const tool of tools) expect(tool.description?.length ?? 0).toBeGreaterThan(30);
    await mcp.close();
  });
});

describe('send_message and routing', () => {
  it('copies the routing and in_reply_to of the batch in flight, read from runner_state on every call', async () => {
    const { s, msg, mcp } = await inFlight();
    const first = await mcp.call('send_message', { text: 'working on it' });
    expect(first).toEqual({ isError: false, text: `Sent as message ${lastOut(s).seq}.` });
    expect(lastOut(s)).toMatchObject({ kind: 'chat', in_reply_to: msg.id, platform_id: 'C1', channel_type: 'slack', thread_id: 'T1' });
    expect(content(lastOut(s))).toEqual({ text: 'working on it' });

    // The runner moves on to a message from another chat: the same server process follows at once.
    const next = s.chat('other', { platformId: 'D2', channelType: 'discord' });
    putBatchInFlight(s.db, next.id);
    await mcp.call('send_message', { text: 'second' });
    expect(lastOut(s)).toMatchObject({ in_reply_to: next.id, platform_id: 'D2', channel_type: 'discord', thread_id: null });
    await mcp.close();
  });

  it('writes null routing when no batch is in flight', async () => {
    const s = createTestSession();
    const mcp = await startMcpClient(s.paths.root);
    expect((await mcp.call('send_message', { text: 'hi' })).isError).toBe(false);
    expect(lastOut(s)).toMatchObject({ in_reply_to: null, platform_id: null, channel_type: null, thread_id: null });
    await mcp.close();
  });

  it.each([
    ['channel and platformId', { channel: 'telegram', platformId: 'tg-9' }, { channel_type: 'telegram', platform_id: 'tg-9', thread_id: null }],
    ['all three', { channel: 'telegram', platformId: 'tg-9', threadId: 'x' }, { channel_type: 'telegram', platform_id: 'tg-9', thread_id: 'x' }],
    ['platformId only', { platformId: 'C7' }, { channel_type: 'slack', platform_id: 'C7', thread_id: null }],
    ['threadId only', { threadId: 'T2' }, { channel_type: 'slack', platform_id: 'C1', thread_id: 'T2' }],
  ])('an explicit destination (%s) overrides the routing for that row; in_reply_to stays', async (_name, destination, expected) => {
    const { s, msg, mcp } = await inFlight();
    expect((await mcp.call('send_message', { text: 'elsewhere', ...destination })).isError).toBe(false);
    expect(lastOut(s)).toMatchObject({ ...expected, in_reply_to: msg.id });
    await mcp.call('send_message', { text: 'back home' });
    expect(lastOut(s)).toMatchObject({ channel_type: 'slack', platform_id: 'C1', thread_id: 'T1' });
    await mcp.close();
  });
});

describe('send_card, edit_message, add_reaction, send_to_agent, register_agent_group', () => {
  it('send_card writes a chat-sdk card row with the batch routing', async () => {
    const { s, msg, mcp } = await inFlight();
    const card = { title: 'Deploy', children: [{ type: 'text', text: 'v2 is out' }], actions: [{ label: 'Open' }] };
    expect((await mcp.call('send_card', { card, fallbackText: 'Deploy: v2 is out' })).isError).toBe(false);
    expect(lastOut(s)).toMatchObject({ kind: 'chat-sdk', in_reply_to: msg.id, channel_type: 'slack' });
    expect(content(lastOut(s))).toEqual({ type: 'card', card, fallbackText: 'Deploy: v2 is out' });
    await mcp.close();
  });

  it('edit_message edits an own message by its integer id, routed where that message lives', async () => {
    const { s, msg, mcp } = await inFlight();
    await mcp.call('send_message', { text: 'draft', channel: 'telegram', platformId: 'tg-1' });
    const draft = lastOut(s);
    expect(await mcp.call('edit_message', { messageId: String(draft.seq), text: 'final' })).toMatchObject({ isError: false });
    expect(content(lastOut(s))).toEqual({ operation: 'edit', messageId: draft.seq, text: 'final' });
    expect(lastOut(s)).toMatchObject({ kind: 'chat', channel_type: 'telegram', platform_id: 'tg-1', in_reply_to: msg.id });
    const user = await mcp.call('edit_message', { messageId: msg.seq, text: 'x' });
    expect(user).toEqual({ isError: true, text: `message ${msg.seq} is not a chat message you sent: only those can be edited` });
    await mcp.close();
  });

  it('add_reaction reacts to a user message by its integer id', async () => {
    const { s, msg, mcp } = await inFlight();
    expect((await mcp.call('add_reaction', { messageId: msg.seq, emoji: 'thumbs_up' })).isError).toBe(false);
    expect(content(lastOut(s))).toEqual({ operation: 'reaction', messageId: msg.seq, emoji: 'thumbs_up' });
    expect(lastOut(s)).toMatchObject({ platform_id: 'C1', channel_type: 'slack', thread_id: 'T1', in_reply_to: msg.id });
    await mcp.close();
  });

  it('send_to_agent writes a row to channel "agent" with the group and session', async () => {
    const { s, msg, mcp } = await inFlight();
    expect((await mcp.call('send_to_agent', { agentGroupId: 'ag-research', text: 'dig into X', sessionId: 'sess-2' })).isError).toBe(false);
    expect(lastOut(s)).toMatchObject({ kind: 'chat', channel_type: 'agent', platform_id: 'ag-research', thread_id: 'sess-2', in_reply_to: msg.id });
    expect(content(lastOut(s))).toEqual({ text: 'dig into X' });
    await mcp.call('send_to_agent', { agentGroupId: 'ag-research', text: 'again' });
    expect(lastOut(s).thread_id).toBeNull();
    await mcp.close();
  });

  it('register_agent_group sends a system action for the host', async () => {
    const { s, msg, mcp } = await inFlight();
    const request = {
      name: 'Research',
      folder: 'research',
      platformId: 'C9',
      channelType: 'slack',
      sessionMode: 'per-thread',
      triggerRules: { mention: true },
    };
    expect((await mcp.call('register_agent_group', request)).isError).toBe(false);
    expect(lastOut(s)).toMatchObject({ kind: 'system', in_reply_to: msg.id, channel_type: 'slack', platform_id: 'C1' });
    expect(content(lastOut(s))).toEqual({ action: 'register_agent_group', ...request });
    await mcp.close();
  });

  it('add_mcp_server sends a system action for the host; a server that is not one is refused at once', async () => {
    const { s, msg, mcp } = await inFlight();
    const request = {
      name: 'github',
      command: 'npx',
      args: ['-y', '@modelcontextprotocol/server-github'],
      env: { GITHUB_PERSONAL_ACCESS_TOKEN: { secret: 'GITHUB_TOKEN' } },
      reason: 'to read the issues',
    };
    expect((await mcp.call('add_mcp_server', request)).isError).toBe(false);
    expect(lastOut(s)).toMatchObject({ kind: 'system', in_reply_to: msg.id, channel_type: 'slack', platform_id: 'C1' });
    const { name, reason, ...server } = request;
    expect(content(lastOut(s))).toEqual({ action: 'add_mcp_server', name, reason, server });
    const rows = s.outbound().length;
    const refusals: [Record<string, unknown>, string][] = [
      [
        { name: 'x', command: 'node', url: 'https://mcp.example.com/mcp', reason: 'r' },
        'give either command (a stdio server) or url (an HTTP server), not both or neither',
      ],
      [{ name: 'x', reason: 'r' }, 'give either command (a stdio server) or url (an HTTP server), not both or neither'],
      [{ name: 'pincer', command: 'node', reason: 'r' }, `invalid MCP server: pincer: "pincer" is the name of Pincer's own server; choose another`],
      [{ name: 'x', url: 'ftp://example.invalid/', reason: 'r' }, 'url must be an http(s) URL'],
    ];
    for (const [args, error] of refusals) {
      const result = await mcp.call('add_mcp_server', args);
      expect({ args, isError: result.isError }).toEqual({ args, isError: true });
      expect(result.text).toContain(error);
    }
    expect(s.outbound()).toHaveLength(rows);
    await mcp.close();
  });
});

describe('send_file', () => {
  function outboxFile(s: TestSession, row: OutboundRow, name: string): string {
    return path.join(s.paths.outbox, row.id, name);
  }

  it('copies a file named relative to agent/ into outbox/<message-id>/ and lists it', async () => {
    const { s, msg, mcp } = await inFlight();
    fs.mkdirSync(path.join(s.paths.agent, 'out'));
    fs.writeFileSync(path.join(s.paths.agent, 'out', 'report.txt'), 'numbers');
    expect((await mcp.call('send_file', { path: 'out/report.txt', text: 'here it is' })).isError).toBe(false);
    const row = lastOut(s);
    expect(row).toMatchObject({ kind: 'chat', in_reply_to: msg.id, channel_type: 'slack' });
    expect(content(row)).toEqual({ text: 'here it is', files: ['report.txt'] });
    expect(fs.readFileSync(outboxFile(s, row, 'report.txt'), 'utf8')).toBe('numbers');
    await mcp.close();
  });

  it('takes an absolute path inside the workspace, a symlink that stays inside, and a display filename', async () => {
    const { s, mcp } = await inFlight();
    fs.writeFileSync(path.join(s.paths.root, 'global', 'notes.md'), '# notes');
    fs.symlinkSync(path.join(s.paths.root, 'global', 'notes.md'), path.join(s.paths.agent, 'link.md'));
    await mcp.call('send_file', { path: path.join(s.paths.root, 'global', 'notes.md'), filename: 'Notes 2026.md' });
    expect(content(lastOut(s))).toEqual({ text: '', files: ['Notes 2026.md'] });
    expect(fs.existsSync(outboxFile(s, lastOut(s), 'Notes 2026.md'))).toBe(true);
    expect((await mcp.call('send_file', { path: 'link.md' })).isError).toBe(false);
    expect(fs.readFileSync(outboxFile(s, lastOut(s), 'link.md'), 'utf8')).toBe('# notes');
    await mcp.close();
  });

  it('reads through agent/ when it is a link to the agent group folder outside the session folder', async () => {
    const { s, mcp } = await inFlight();
    const group = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-group-'));
    try {
      fs.rmSync(s.paths.agent, { recursive: true });
      fs.symlinkSync(group, s.paths.agent, 'dir'); // as the host links it for a process runner
      fs.writeFileSync(path.join(group, 'notes.md'), 'group notes');
      const result = await mcp.call('send_file', { path: 'notes.md' });
      expect(result.isError).toBe(false);
      expect(fs.readFileSync(outboxFile(s, lastOut(s), 'notes.md'), 'utf8')).toBe('group notes');
      // the group folder's neighbours are still outside
      fs.writeFileSync(path.join(path.dirname(group), `${path.basename(group)}-secret.txt`), 'no');
      const escape = await mcp.call('send_file', { path: `../${path.basename(group)}-secret.txt` });
      expect(escape.isError).toBe(true);
      fs.rmSync(path.join(path.dirname(group), `${path.basename(group)}-secret.txt`));
    } finally {
      fs.rmSync(group, { recursive: true, force: true });
    }
    await mcp.close();
  });

  it('refuses paths outside the workspace, symlinks out of it, folders, missing and too large files', async () => {
    const outside = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-outside-'));
    try {
      fs.writeFileSync(path.join(outside, 'secret.txt'), 'secret');
      const { s, mcp } = await inFlight({ PINCER_MAX_FILE_BYTES: '1000' });
      fs.symlinkSync(path.join(outside, 'secret.txt'), path.join(s.paths.agent, 'escape.txt'));
      fs.symlinkSync(outside, path.join(s.paths.agent, 'escape-dir'));
      fs.writeFileSync(path.join(s.paths.agent, 'big.bin'), Buffer.alloc(2000));
      const cases: [Record<string, unknown>, string][] = [
        [{ path: path.join(outside, 'secret.txt') }, 'is outside the workspace'],
        [{ path: path.relative(s.paths.agent, path.join(outside, 'secret.txt')) }, 'is outside the workspace'],
        [{ path: 'escape.txt' }, 'is outside the workspace'],
        [{ path: 'escape-dir/secret.txt' }, 'is outside the workspace'],
        [{ path: '.' }, 'is not a file'],
        [{ path: 'missing.txt' }, 'file not found: missing.txt'],
        [{ path: 'big.bin' }, 'big.bin is 2000 bytes, over the limit of 1000 bytes'],
        [{ path: 'big.bin', filename: '../x' }, 'filename must be a plain file name'],
      ];
      for (const [args, message] of cases) {
        const result = await mcp.call('send_file', args);
        expect(result.isError, JSON.stringify(args)).toBe(true);
        expect(result.text).toContain(message);
      }
      expect(s.outbound()).toHaveLength(0);
      expect(fs.readdirSync(s.paths.outbox)).toEqual([]);
      await mcp.close();
    } finally {
      fs.rmSync(outside, { recursive: true, force: true });
    }
  });
});
