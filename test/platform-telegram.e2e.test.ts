import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openSessionDb } from '../src/db/connection.js';
import { insertOutbound } from '../src/db/messages.js';
import { startFakeTelegram, type FakeTelegram, type TelegramCall } from './support/fake-telegram.js';
import { startHost, stopAllHosts, type HostHandle } from './support/host-harness.js';
import { inboundOf, outboundOf, platformRows, sessionFor, startPlatformHost } from './support/platform-host.js';
import { waitFor } from './support/wait.js';

/**
 * Telegram through a real host (`pincer host`, real runner processes, mock provider) and a fake Bot API: long
 * polling with no public URL, answers in the same chat, redeliveries answered once, 429 retry-after waited out,
 * long answers split at 4,096, question buttons, an API that answers 500 for a while, group rules, attachments,
 * and the webhook mode with its secret token.
 */
let telegram: FakeTelegram;
let host: HostHandle;

const textOf = (call: TelegramCall): string => String(call.body.text ?? call.body.caption ?? '');
const toChat = (chatId: number) => (call: TelegramCall) => Number(call.body.chat_id) === chatId;

function telegramEnv(fake: FakeTelegram, extra: Record<string, string> = {}): Record<string, string> {
  return { TELEGRAM_BOT_TOKEN: fake.token, TELEGRAM_API_BASE_URL: fake.url, ...extra };
}

describe('Telegram (long polling)', () => {
  beforeAll(async () => {
    telegram = await startFakeTelegram();
    host = await startPlatformHost('telegram', telegramEnv(telegram, { PINCER_ALLOWED_USERS: '', PINCER_DELIVERY_RETRY_MS: '200' }));
    await waitFor('polling', () => telegram.calls.some((c) => c.method === 'getUpdates'), { timeoutMs: 20_000 });
  });

  afterAll(async () => {
    expect(await host.stop()).toBe(0);
    expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
    await telegram.close();
  });

  it('answers a direct message in the same chat, shows typing, and stores the message without raw', async () => {
    telegram.userSends({ chatId: 501, userId: 501, text: 'hello pincer' });
    const answer = await telegram.waitForSent('the answer', (c) => toChat(501)(c) && textOf(c).includes('hello pincer'));
    expect(textOf(answer)).toContain('echo:');
    expect(telegram.calls.some((c) => c.method === 'sendChatAction' && Number(c.body.chat_id) === 501)).toBe(true);
    const session = await sessionFor(host, 'telegram', 'telegram:501');
    const row = inboundOf(host, session.id).find((r) => r.kind === 'chat-sdk')!;
    const content = JSON.parse(row.content) as Record<string, unknown>;
    expect(content).toMatchObject({ text: 'hello pincer', author: { userId: '501', fullName: 'Ada' } });
    expect(content).not.toHaveProperty('raw');
    expect(row).toMatchObject({ channel_type: 'telegram', platform_id: 'telegram:501', trigger: 1 });
    await waitFor('delivered', () => outboundOf(host, session.id).every((r) => r.delivered_at !== null && r.platform_message_id !== null));
  });

  it('answers a message that Telegram delivers twice only once', async () => {
    const { updateId } = telegram.userSends({ chatId: 502, userId: 502, text: 'only once please' });
    telegram.redeliver(updateId);
    await telegram.waitForSent('the answer', (c) => toChat(502)(c) && textOf(c).includes('only once please'));
    // A later message's answer proves the duplicate was seen and skipped, not still on its way.
    telegram.userSends({ chatId: 502, userId: 502, text: 'and then this' });
    await telegram.waitForSent('the second answer', (c) => toChat(502)(c) && textOf(c).includes('and then this'));
    expect(telegram.sent().filter((c) => toChat(502)(c) && textOf(c).includes('only once please'))).toHaveLength(1);
    const rows = (await platformRows(host, 'telegram')).filter((r) => r.content.includes('only once please'));
    expect(rows).toHaveLength(1);
  });

  it('waits out a 429 for its retry-after before sending again', async () => {
    telegram.fail('sendMessage', 1, 429, 2);
    telegram.userSends({ chatId: 503, userId: 503, text: 'rate limited' });
    const answer = await telegram.waitForSent('the answer', (c) => toChat(503)(c) && textOf(c).includes('rate limited'));
    const refused = telegram.calls.find((c) => c.method === 'sendMessage' && c.status === 429)!;
    expect(refused).toBeDefined();
    expect(answer.at - refused.at).toBeGreaterThanOrEqual(2000);
  });

  it('splits a long answer into messages of at most 4,096 characters, in order', async () => {
    const long = Array.from({ length: 120 }, (_, i) => `Line ${i} of a long message that goes on and on.`).join('\n\n') + '\n\nTHEEND';
    telegram.userSends({ chatId: 504, userId: 504, text: long });
    await telegram.waitForSent('the last part', (c) => toChat(504)(c) && textOf(c).includes('THEEND'));
    const parts = telegram.sent().filter(toChat(504));
    expect(parts.length).toBeGreaterThanOrEqual(2);
    for (const part of parts) expect(textOf(part).length).toBeLessThanOrEqual(4096);
    expect(textOf(parts[0]!)).toContain('Line 0 ');
    expect(parts.findIndex((p) => textOf(p).includes('Line 119 '))).toBe(parts.length - 1);
    expect(parts.some((p) => textOf(p).endsWith('...'))).toBe(false);
  });

  it('asks a question with buttons; pressing one answers it and marks the question', async () => {
    telegram.userSends({ chatId: 505, userId: 505, text: 'start a session' });
    await telegram.waitForSent('the first answer', (c) => toChat(505)(c) && textOf(c).includes('start a session'));
    const session = await sessionFor(host, 'telegram', 'telegram:505');
    // The agent's ask_user_question writes this row (as the MCP server does).
    const db = openSessionDb(path.join(host.sessionDir(session.id), 'session.db'));
    insertOutbound(db, {
      kind: 'chat',
      content: {
        operation: 'ask_question',
        questionId: 'q-505',
        title: 'Deploy?',
        question: 'Deploy to production now?',
        options: [
          { label: 'Yes', value: 'yes' },
          { label: 'Not yet', value: 'no' },
        ],
      },
      routing: { channelType: 'telegram', platformId: 'telegram:505', threadId: null, inReplyTo: null },
    });
    db.close();
    const question = await telegram.waitForSent('the question', (c) => toChat(505)(c) && c.body.reply_markup !== undefined);
    expect(textOf(question)).toContain('Deploy to production now?');
    telegram.pressButton(question, 1, { id: 505, firstName: 'Bea' });
    const answer = await waitFor('the answer row', () =>
      inboundOf(host, session.id).find((r) => r.kind === 'system' && r.content.includes('question_response')),
    );
    expect(JSON.parse(answer.content)).toEqual({ type: 'question_response', questionId: 'q-505', selectedOption: 'no', userId: 'telegram:505' });
    const marked = await waitFor('the question marked answered', () => telegram.calls.find((c) => c.method === 'editMessageText' && toChat(505)(c)));
    expect(textOf(marked)).toContain('Not yet');
  });

  it("sends files, edits its message, reacts to the user's message and shows cards", async () => {
    telegram.userSends({ chatId: 508, userId: 508, text: 'show me everything' });
    await telegram.waitForSent('the first answer', (c) => toChat(508)(c) && textOf(c).includes('show me everything'));
    const session = await sessionFor(host, 'telegram', 'telegram:508');
    const userRow = inboundOf(host, session.id).find((r) => r.kind === 'chat-sdk')!;
    const routing = { channelType: 'telegram', platformId: 'telegram:508', threadId: null, inReplyTo: null };
    const outbox = path.join(host.sessionDir(session.id), 'outbox', 'file-row-508');
    fs.mkdirSync(outbox, { recursive: true });
    fs.writeFileSync(path.join(outbox, 'report.txt'), 'the report\n');
    // What send_file, edit_message, add_reaction and send_card write (as the MCP server does).
    const db = openSessionDb(path.join(host.sessionDir(session.id), 'session.db'));
    const fileRow = insertOutbound(db, { id: 'file-row-508', kind: 'chat', content: { text: 'here is the report', files: ['report.txt'] }, routing });
    insertOutbound(db, { kind: 'chat', content: { operation: 'edit', messageId: fileRow.seq, text: 'here is the final report' }, routing });
    insertOutbound(db, { kind: 'chat', content: { operation: 'reaction', messageId: userRow.seq, emoji: '👍' }, routing });
    insertOutbound(db, {
      kind: 'chat-sdk',
      content: {
        type: 'card',
        card: { title: 'Status', children: [{ type: 'text', content: 'All green' }], actions: [{ label: 'Open dashboard', url: 'https://example.com/d' }] },
        fallbackText: 'Status: all green',
      },
      routing,
    });
    db.close();
    const text = await telegram.waitForSent('the text', (c) => toChat(508)(c) && textOf(c).includes('here is the report'));
    const document = await telegram.waitForSent('the file', (c) => toChat(508)(c) && c.method === 'sendDocument');
    expect(document.body.document_name).toBe('report.txt');
    const edit = await waitFor('the edit', () =>
      telegram.calls.find((c) => c.method === 'editMessageText' && toChat(508)(c) && textOf(c).includes('final report')),
    );
    expect(Number(edit.body.message_id)).toBe((text.result as { message_id: number }).message_id);
    const reaction = await waitFor('the reaction', () => telegram.calls.find((c) => c.method === 'setMessageReaction' && toChat(508)(c)));
    expect(reaction.body).toMatchObject({
      message_id: Number(String(JSON.parse(userRow.content).id).split(':').pop()),
      reaction: [{ type: 'emoji', emoji: '👍' }],
    });
    const card = await telegram.waitForSent('the card', (c) => toChat(508)(c) && JSON.stringify(c.body.reply_markup ?? '').includes('https://example.com/d'));
    expect(textOf(card)).toContain('All green');
  });

  it('keeps working while Telegram answers 500 for a while, and delivers afterwards', async () => {
    telegram.fail('getUpdates', 2, 500);
    telegram.fail('sendMessage', 3, 500);
    telegram.userSends({ chatId: 506, userId: 506, text: 'through the outage' });
    await telegram.waitForSent('the answer after the outage', (c) => toChat(506)(c) && textOf(c).includes('through the outage'), 40_000);
    expect(telegram.calls.filter((c) => c.status === 500).length).toBe(5);
    expect(host.child.exitCode).toBeNull();
  });

  it('saves an attachment into the session downloads and tells the agent where', async () => {
    const data = Buffer.from('%PDF-1.4 a tiny test file\n');
    telegram.userSends({ chatId: 507, userId: 507, text: 'see attached', document: { name: 'notes.txt', data, mimeType: 'text/plain' } });
    await telegram.waitForSent('the answer', (c) => toChat(507)(c) && textOf(c).includes('see attached'));
    const session = await sessionFor(host, 'telegram', 'telegram:507');
    const row = inboundOf(host, session.id).find((r) => r.kind === 'chat-sdk')!;
    const attachment = (JSON.parse(row.content) as { attachments: { localPath: string; name: string }[] }).attachments[0]!;
    expect(attachment).toMatchObject({ name: 'notes.txt', localPath: `downloads/${row.id}/notes.txt` });
    expect(fs.readFileSync(path.join(host.sessionDir(session.id), attachment.localPath))).toEqual(data);
    expect(fs.readdirSync(path.join(host.sessionDir(session.id), 'downloads', row.id))).toEqual(['notes.txt']);
    // The agent was told where the file is (its answer echoes the prompt; the sent text has MarkdownV2 escapes).
    const said = JSON.parse(outboundOf(host, session.id)[0]!.content) as { text: string };
    expect(said.text).toContain(`downloads/${row.id}/notes.txt`);
  });
  it('writes an attachment into the folder it checked, even when the agent swaps downloads/ for a link during the download', async () => {
    telegram.userSends({ chatId: 508, userId: 508, text: 'hello' });
    await telegram.waitForSent('the first answer', (c) => toChat(508)(c) && textOf(c).includes('hello'));
    const session = await sessionFor(host, 'telegram', 'telegram:508');
    const folder = host.sessionDir(session.id);
    const downloads = path.join(folder, 'downloads');
    const before = new Set(fs.readdirSync(downloads));
    const hold = telegram.holdNextFile();
    telegram.userSends({
      chatId: 508,
      userId: 508,
      text: 'see attached',
      document: { name: 'notes.txt', data: Buffer.from('secret-ish notes\n'), mimeType: 'text/plain' },
    });
    await hold.requested;
    // The host made downloads/<id>/ and is downloading: the agent moves the folder away and plants a link to a folder
    // outside the session, with the same <id> in it.
    const id = fs.readdirSync(downloads).find((name) => !before.has(name))!;
    expect(id).toBeDefined();
    const outside = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-outside-'));
    fs.mkdirSync(path.join(outside, id));
    fs.renameSync(downloads, path.join(folder, 'downloads-moved'));
    fs.symlinkSync(outside, downloads);
    hold.release();
    await telegram.waitForSent('the answer', (c) => toChat(508)(c) && textOf(c).includes('see attached'));
    expect(fs.readdirSync(path.join(outside, id))).toEqual([]);
    expect(fs.readFileSync(path.join(folder, 'downloads-moved', id, 'notes.txt'), 'utf8')).toBe('secret-ish notes\n');
    fs.rmSync(outside, { recursive: true, force: true });
  });
});

describe('Telegram rules, failures and webhooks', () => {
  afterEach(async () => {
    expect(await host.stop()).toBe(0);
    expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
    await telegram.close();
  });

  it('in a group answers only a mention (earlier messages ride along as context) and ignores users off the allow-list', async () => {
    telegram = await startFakeTelegram();
    host = await startHost(telegramEnv(telegram, { PINCER_ALLOWED_USERS: 'telegram:42, telegram:43' }));
    telegram.userSends({ chatId: -100, userId: 42, text: 'we were talking about lunch' });
    telegram.userSends({ chatId: -100, userId: 99, text: 'a stranger speaks' });
    telegram.userSends({ chatId: -100, userId: 43, text: '@pincer_test_bot what do you think?', entities: [{ type: 'mention', offset: 0, length: 16 }] });
    const answer = await telegram.waitForSent('the answer to the mention', (c) => toChat(-100)(c) && textOf(c).includes('what do you think?'));
    expect(textOf(answer)).toContain('we were talking about lunch');
    expect(textOf(answer)).not.toContain('a stranger speaks');
    const rows = await platformRows(host, 'telegram');
    expect(rows.map((r) => [JSON.parse(r.content).text, r.trigger])).toEqual([
      ['we were talking about lunch', 0],
      ['@pincer_test_bot what do you think?', 1],
    ]);
    expect(telegram.sent().filter(toChat(-100))).toHaveLength(1);
  });

  it("takes admin rights from the host's records: a platform admin may register a group, another user may not", async () => {
    telegram = await startFakeTelegram();
    host = await startHost(telegramEnv(telegram, { PINCER_ADMIN_USER_ID: 'telegram:42' }));
    telegram.userSends({ chatId: 42, userId: 42, text: 'i am the admin' });
    telegram.userSends({ chatId: 43, userId: 43, text: 'i am not' });
    const admin = await sessionFor(host, 'telegram', 'telegram:42');
    const other = await sessionFor(host, 'telegram', 'telegram:43');
    await telegram.waitForSent('both answers', () => telegram.sent().some(toChat(42)) && telegram.sent().some(toChat(43)));
    // What register_agent_group writes, answering each user's message (as the MCP server does).
    for (const [session, name] of [
      [admin, 'ops'],
      [other, 'sneaky'],
    ] as const) {
      const db = openSessionDb(path.join(host.sessionDir(session.id), 'session.db'));
      const asked = inboundOf(host, session.id).find((r) => r.kind === 'chat-sdk')!;
      insertOutbound(db, {
        kind: 'system',
        content: { action: 'register_agent_group', name, folder: name, channelType: 'telegram', platformId: `telegram:-${name.length}` },
        routing: { channelType: 'telegram', platformId: session.platformId, threadId: null, inReplyTo: asked.id },
      });
      db.close();
    }
    const answerOf = (sessionId: string) => () => inboundOf(host, sessionId).find((r) => r.kind === 'system' && r.content.includes('register_agent_group'));
    expect(JSON.parse((await waitFor("the admin's answer", answerOf(admin.id))).content)).toMatchObject({ status: 'success', result: { name: 'ops' } });
    const refused = JSON.parse((await waitFor("the other's answer", answerOf(other.id))).content) as { status: string; error: string };
    expect(refused).toMatchObject({ status: 'error' });
    expect(refused.error).toContain('user "telegram:43" is not an admin');
  });

  it('gives up on a delivery Telegram keeps refusing, and tells the agent (delivery_error, not delivered)', async () => {
    telegram = await startFakeTelegram();
    host = await startHost(telegramEnv(telegram, { PINCER_DELIVERY_ATTEMPTS: '2', PINCER_DELIVERY_RETRY_MS: '50' }));
    telegram.fail('sendMessage', 1000, 500);
    telegram.userSends({ chatId: 601, userId: 601, text: 'never arrives' });
    const session = await sessionFor(host, 'telegram', 'telegram:601');
    const failed = await waitFor('the delivery error', () => outboundOf(host, session.id).find((r) => r.delivery_error !== null), { timeoutMs: 20_000 });
    expect(failed.delivered_at).toBeNull();
    expect(failed.delivery_error).toMatch(/telegram: .*after 2 attempts/);
    const notice = inboundOf(host, session.id).find((r) => r.kind === 'system' && r.content.includes('deliver_message'))!;
    expect(notice.trigger).toBe(0);
    expect(JSON.parse(notice.content)).toMatchObject({ status: 'error', result: { messageId: failed.seq } });
  });

  it('in webhook mode refuses a wrong secret token with 401 and stores nothing; the right one is answered', async () => {
    telegram = await startFakeTelegram();
    telegram.webhookUrl = 'https://pincer.example/webhooks/telegram';
    host = await startHost(telegramEnv(telegram, { TELEGRAM_WEBHOOK_SECRET_TOKEN: 'the-secret-token' }));
    const update = {
      update_id: 77,
      message: {
        message_id: 9,
        date: Math.floor(Date.now() / 1000),
        chat: { id: 701, type: 'private', first_name: 'Ada' },
        from: { id: 701, is_bot: false, first_name: 'Ada' },
        text: 'via webhook',
      },
    };
    const bad = await host.request('POST', '/webhooks/telegram', update, { token: null, headers: { 'x-telegram-bot-api-secret-token': 'wrong' } });
    expect(bad.status).toBe(401);
    const none = await host.request('POST', '/webhooks/telegram', update, { token: null });
    expect(none.status).toBe(401);
    expect(await platformRows(host, 'telegram')).toEqual([]);
    const good = await host.request('POST', '/webhooks/telegram', update, { token: null, headers: { 'x-telegram-bot-api-secret-token': 'the-secret-token' } });
    expect(good.status).toBe(200);
    await telegram.waitForSent('the answer', (c) => toChat(701)(c) && textOf(c).includes('via webhook'));
    const again = await host.request('POST', '/webhooks/telegram', update, { token: null, headers: { 'x-telegram-bot-api-secret-token': 'the-secret-token' } });
    expect(again.status).toBe(200);
    expect(await platformRows(host, 'telegram')).toHaveLength(1);
    expect(telegram.calls.some((c) => c.method === 'getUpdates')).toBe(false);
  });
});
