import path from 'node:path';
import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { openSessionDb } from '../src/db/connection.js';
import { insertOutbound } from '../src/db/messages.js';
import type { InboundRow, OutboundRow } from '../src/db/types.js';
import { PROCESS_RUNNER, startHost, stopAllHosts, TEST_TOKEN, type HostHandle } from './support/host-harness.js';
import { waitFor } from './support/wait.js';

/**
 * The rows the MCP server writes (questions, edits, system actions, agent messages), written here straight into the
 * session DB of a real `pincer host`, and what the host does with them.
 */
afterEach(async () => {
  expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
});

function sessionDb(host: HostHandle, sessionId: string) {
  return openSessionDb(path.join(host.sessionDir(sessionId), 'session.db'));
}

async function converse(host: HostHandle, conversation: string, body: Record<string, unknown>) {
  const res = await host.request('POST', `/v1/conversations/${conversation}/messages`, body);
  expect(res.status).toBe(202);
  return res.body as { sessionId: string; id: string; seq: number };
}

function systemAnswers(db: ReturnType<typeof openSessionDb>, action: string): Record<string, unknown>[] {
  return (db.prepare(`SELECT content FROM messages_in WHERE kind = 'system' ORDER BY seq`).all() as { content: string }[])
    .map((r) => JSON.parse(r.content) as Record<string, unknown>)
    .filter((c) => c.action === action);
}

const routing = (conversation: string, inReplyTo: string | null) => ({ channelType: 'http', platformId: conversation, threadId: null, inReplyTo });

describe('host delivery of MCP rows', () => {
  it('delivers a question and writes the answer back; a second answer is refused', async () => {
    const host = await startHost();
    const stream = host.stream('qa');
    const sent = await converse(host, 'qa', { text: 'start' });
    const reply = await stream.waitFor('reply', (e) => e.event === 'chat');
    const db = sessionDb(host, sent.sessionId);
    insertOutbound(db, {
      kind: 'chat',
      content: {
        operation: 'ask_question',
        questionId: 'q-1',
        title: 'Confirm',
        question: 'Delete it?',
        options: [
          { label: 'Yes', value: 'yes' },
          { label: 'No', value: 'no' },
        ],
      },
      routing: routing('qa', sent.id),
    });
    insertOutbound(db, {
      kind: 'chat',
      content: { operation: 'reaction', messageId: reply.data.seq as number, emoji: 'thumbs_up' },
      routing: routing('qa', sent.id),
    });
    fs.mkdirSync(path.join(host.sessionDir(sent.sessionId), 'outbox', 'file-msg'), { recursive: true });
    fs.writeFileSync(path.join(host.sessionDir(sent.sessionId), 'outbox', 'file-msg', 'notes.txt'), 'file body');
    insertOutbound(db, { id: 'file-msg', kind: 'chat', content: { text: 'see attached', files: ['notes.txt'] }, routing: routing('qa', sent.id) });
    const withFile = await stream.waitFor('file message', (e) => e.event === 'chat' && e.data.text === 'see attached');
    expect(withFile.data.files).toEqual(['notes.txt']);
    const [url] = withFile.data.fileUrls as string[];
    const download = await fetch(`http://127.0.0.1:${host.port}${url}`, { headers: { Authorization: `Bearer ${TEST_TOKEN}` } });
    expect(download.status).toBe(200);
    expect(await download.text()).toBe('file body');
    expect((await fetch(`http://127.0.0.1:${host.port}${url}`)).status).toBe(401);
    const question = await stream.waitFor('question', (e) => e.event === 'question');
    expect(question.data).toMatchObject({
      questionId: 'q-1',
      title: 'Confirm',
      options: [
        { label: 'Yes', value: 'yes' },
        { label: 'No', value: 'no' },
      ],
    });
    const reaction = await stream.waitFor('reaction', (e) => e.event === 'reaction');
    expect(reaction.data).toMatchObject({ emoji: 'thumbs_up', messageId: reply.data.seq, targetPlatformMessageId: `http-${reply.id}` });

    expect((await host.request('POST', '/v1/conversations/other/answers', { questionId: 'q-1', selectedOption: 'yes' })).status).toBe(404);
    const answer = await host.request('POST', '/v1/conversations/qa/answers', { questionId: 'q-1', selectedOption: 'yes', userId: 'u1' });
    expect(answer.status).toBe(202);
    const row = db.prepare('SELECT * FROM messages_in WHERE id = ?').get(answer.body.id) as InboundRow;
    expect(row.kind).toBe('system');
    expect(JSON.parse(row.content)).toEqual({ type: 'question_response', questionId: 'q-1', selectedOption: 'yes', userId: 'u1' });
    const again = await host.request('POST', '/v1/conversations/qa/answers', { questionId: 'q-1', selectedOption: 'no' });
    expect(again.status).toBe(400);
    expect(again.body.error).toMatch(/answered already/);
    db.close();
    stream.close();
    expect(await host.stop()).toBe(0);
  });

  it('runs register_agent_group for an admin only, and routes the bound conversation to the new group', async () => {
    // checks the session folder's `agent` link, which a plain process runner reads (a sandbox mounts the group there)
    const host = await startHost({ ...PROCESS_RUNNER, PINCER_ADMIN_USER_ID: 'boss' });
    const stream = host.stream('ops');
    const mallory = await converse(host, 'ops', { text: 'make me a group', sender: 'Mallory', senderId: 'mallory' });
    await stream.waitFor('first reply', (e) => e.event === 'chat');
    const db = sessionDb(host, mallory.sessionId);
    const register = { action: 'register_agent_group', name: 'helper', folder: 'helper', platformId: 'helper-chat', channelType: 'http' };
    insertOutbound(db, { kind: 'system', content: register, routing: routing('ops', mallory.id) });
    const refused = await waitFor('refusal', () => systemAnswers(db, 'register_agent_group')[0]);
    expect(refused).toMatchObject({ status: 'error' });
    expect(refused.error).toMatch(/admins only; user "mallory" is not an admin/);
    // The agent sees the answer as a [SYSTEM RESPONSE] in its next prompt.
    await stream.waitFor('system response echoed', (e) => e.event === 'chat' && String(e.data.text).includes('[SYSTEM RESPONSE]'));

    const boss = await converse(host, 'ops', { text: 'please', sender: 'Boss', senderId: 'boss' });
    insertOutbound(db, { kind: 'system', content: register, routing: routing('ops', boss.id) });
    const accepted = await waitFor('success', () => systemAnswers(db, 'register_agent_group')[1]);
    expect(accepted).toMatchObject({ status: 'success', result: { name: 'helper' } });
    expect(String((accepted.result as { agent_group_id: string }).agent_group_id)).toMatch(/^ag-/);
    db.close();

    const helper = await converse(host, 'helper-chat', { text: 'hello helper' });
    const sessions = (await host.request('GET', '/v1/sessions')).body.sessions as { id: string; agentGroup: string }[];
    expect(sessions.find((s) => s.id === helper.sessionId)?.agentGroup).toBe('helper');
    expect(fs.realpathSync(path.join(host.sessionDir(helper.sessionId), 'group'))).toBe(path.join(host.home, 'groups', 'helper'));
    stream.close();
    expect(await host.stop()).toBe(0);
  });

  it('merges update_task into the active task row and refuses an invalid cron', async () => {
    const host = await startHost();
    const task = await host.request('POST', '/v1/conversations/tasks/tasks', { prompt: 'old prompt', processAfter: '2099-01-01T09:00:00Z', script: 'echo hi' });
    expect(task.status).toBe(202);
    const { sessionId, id } = task.body as { sessionId: string; id: string };
    const db = sessionDb(host, sessionId);
    insertOutbound(db, { kind: 'system', content: { action: 'update_task', taskId: id, recurrence: 'not a cron' }, routing: routing('tasks', null) });
    const refused = await waitFor('refusal', () => systemAnswers(db, 'update_task')[0]);
    expect(refused).toMatchObject({ status: 'error' });
    expect(refused.error).toMatch(/recurrence "not a cron" is not a cron expression of 5 fields/);
    insertOutbound(db, {
      kind: 'system',
      content: { action: 'update_task', taskId: id, prompt: 'new prompt', recurrence: '0 9 * * *' },
      routing: routing('tasks', null),
    });
    const ok = await waitFor('success', () => systemAnswers(db, 'update_task')[1]);
    expect(ok).toMatchObject({ status: 'success', result: { taskId: id, recurrence: '0 9 * * *' } });
    const row = db.prepare('SELECT * FROM messages_in WHERE id = ?').get(id) as InboundRow;
    expect(JSON.parse(row.content)).toEqual({ prompt: 'new prompt', script: 'echo hi' });
    expect(row).toMatchObject({ recurrence: '0 9 * * *', process_after: '2099-01-01T09:00:00.000Z', status: 'pending' });
    db.close();
    expect(await host.stop()).toBe(0);
  });

  it('delivers send_to_agent rows into the target group and stops two agents echoing each other forever', async () => {
    // main may message peer (the administrator's route); peer answers in its own conversation with main
    const host = await startHost({ PINCER_ADMIN_USER_ID: 'boss', PINCER_AGENT_ROUTES: 'main>peer' });
    const stream = host.stream('main-chat');
    const boss = await converse(host, 'main-chat', { text: 'set up', senderId: 'boss', sender: 'Boss' });
    await stream.waitFor('reply', (e) => e.event === 'chat');
    const db = sessionDb(host, boss.sessionId);
    insertOutbound(db, {
      kind: 'system',
      content: { action: 'register_agent_group', name: 'peer', folder: 'peer', platformId: 'peer-chat', channelType: 'http' },
      routing: routing('main-chat', boss.id),
    });
    const created = await waitFor('peer created', () => systemAnswers(db, 'register_agent_group')[0]);
    const peerId = (created.result as { agent_group_id: string }).agent_group_id;
    // Let the main agent answer the [SYSTEM RESPONSE] first: a batch has one routing, and the exchange below must be
    // the only thing either agent is doing.
    await stream.waitFor('system response answered', (e) => e.event === 'chat' && String(e.data.text).includes('[SYSTEM RESPONSE]'));
    insertOutbound(db, {
      kind: 'chat',
      content: { text: 'hello peer' },
      routing: { channelType: 'agent', platformId: peerId, threadId: null, inReplyTo: null },
    });
    // Two mock agents echo each other; the host stops the exchange at its hop limit and records why.
    const stopped = await waitFor(
      'the loop stopped',
      () => {
        const sessions = fs.readdirSync(path.join(host.home, 'sessions'));
        for (const s of sessions) {
          let row: OutboundRow | undefined;
          try {
            const sdb = openSessionDb(path.join(host.home, 'sessions', s, 'session.db'), { readonly: true });
            try {
              row = sdb.prepare(`SELECT * FROM messages_out WHERE delivery_error IS NOT NULL`).get() as OutboundRow | undefined;
            } finally {
              sdb.close();
            }
          } catch {
            continue; // a session being provisioned (and migrated) right now
          }
          if (row) return row;
        }
        return undefined;
      },
      { timeoutMs: 20_000 },
    );
    expect(stopped.channel_type).toBe('agent');
    expect(stopped.delivery_error).toMatch(/answered each other 10 times in a row/);
    const peerSession = ((await host.request('GET', '/v1/sessions')).body.sessions as { id: string; agentGroup: string; channelType: string }[]).find(
      (s) => s.agentGroup === 'peer',
    );
    expect(peerSession?.channelType).toBe('agent');
    const pdb = sessionDb(host, peerSession!.id);
    const first = pdb.prepare('SELECT * FROM messages_in ORDER BY seq LIMIT 1').get() as InboundRow;
    pdb.close();
    expect(JSON.parse(first.content)).toMatchObject({ text: 'hello peer', sender: 'main', agentHops: 1 });
    expect(first).toMatchObject({ channel_type: 'agent', thread_id: boss.sessionId });
    db.close();
    stream.close();
    expect(await host.stop()).toBe(0);
  });
});
