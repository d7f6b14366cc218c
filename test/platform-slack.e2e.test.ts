import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSessionDb } from '../src/db/connection.js';
import { insertOutbound } from '../src/db/messages.js';
import { startFakeSlack, type FakeSlack, type SlackCall } from './support/fake-slack.js';
import { stopAllHosts, type HostHandle } from './support/host-harness.js';
import { deliverWebhook, inboundOf, platformRows, sessionFor, startPlatformHost } from './support/platform-host.js';
import { waitFor } from './support/wait.js';

/**
 * Slack through a real host (mock provider) and a fake Slack: signed Events API requests in at /webhooks/slack, Web
 * API calls out. A message is answered in its thread, a bad signature is refused and stores nothing, a redelivered
 * event is answered once, a 429 is waited out, a long answer is split, question buttons answer the question, and a
 * Web API answering 500 for a while delays the answer without losing it.
 */
let slack: FakeSlack;
let host: HostHandle;

const textOf = (call: SlackCall): string => String(call.body.markdown_text ?? call.body.text ?? '');
const inChannel = (channel: string) => (call: SlackCall) => call.body.channel === channel;

const deliver = (event: { body: string; headers: Record<string, string> }): Promise<number> => deliverWebhook(host, 'slack', event);

describe('Slack (Events API webhook)', () => {
  beforeAll(async () => {
    slack = await startFakeSlack();
    host = await startPlatformHost('slack', {
      SLACK_BOT_TOKEN: slack.botToken,
      SLACK_SIGNING_SECRET: slack.signingSecret,
      SLACK_API_URL: slack.apiUrl,
      PINCER_DELIVERY_RETRY_MS: '200',
    });
  });

  afterAll(async () => {
    expect(await host.stop()).toBe(0);
    expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
    await slack.close();
  });

  it('answers a mention in its thread, and stores the message without raw', async () => {
    const event = slack.messageEvent({ channel: 'C100', user: 'U1', text: 'hello slack', mention: true });
    expect(await deliver(event)).toBe(200);
    const answer = await slack.waitForPost('the answer', (c) => inChannel('C100')(c) && textOf(c).includes('hello slack'));
    expect(answer.body.thread_ts).toBe(event.ts);
    expect(textOf(answer)).toContain('echo:');
    const session = await sessionFor(host, 'slack', 'slack:C100');
    const row = inboundOf(host, session.id).find((r) => r.kind === 'chat-sdk')!;
    expect(row).toMatchObject({ channel_type: 'slack', platform_id: 'slack:C100', thread_id: `slack:C100:${event.ts}`, trigger: 1 });
    const content = JSON.parse(row.content) as Record<string, unknown>;
    expect(content).toMatchObject({ author: { userId: 'U1' }, isMention: true });
    expect(content).not.toHaveProperty('raw');
  });

  it('refuses a bad or missing signature with 401 and stores nothing', async () => {
    const forged = slack.messageEvent({ channel: 'C200', user: 'U2', text: 'forged', mention: true });
    const bad = { body: forged.body, headers: { ...forged.headers, ...slack.sign(forged.body, 'not-the-secret') } };
    expect(await deliver(bad)).toBe(401);
    expect(await deliver({ body: forged.body, headers: { 'content-type': 'application/json' } })).toBe(401);
    // A genuine message afterwards is answered, so the forged one had its chance to show up and did not.
    expect(await deliver(slack.messageEvent({ channel: 'C200', user: 'U2', text: 'genuine', mention: true }))).toBe(200);
    await slack.waitForPost('the genuine answer', (c) => inChannel('C200')(c) && textOf(c).includes('genuine'));
    expect((await platformRows(host, 'slack')).filter((r) => r.content.includes('forged'))).toEqual([]);
    expect(slack.posted().filter((c) => textOf(c).includes('forged'))).toEqual([]);
  });

  it('answers an event Slack delivers twice (a retry, and the message/app_mention pair) once', async () => {
    const event = slack.messageEvent({ channel: 'C300', user: 'U3', text: 'just once', mention: true });
    expect(await deliver(event)).toBe(200);
    expect(await deliver({ body: event.body, headers: { ...event.headers, 'x-slack-retry-num': '1', 'x-slack-retry-reason': 'http_timeout' } })).toBe(200);
    // Slack also sends the plain `message` event for the same message.
    expect(await deliver(slack.messageEvent({ channel: 'C300', user: 'U3', text: 'just once', mention: false, ts: event.ts, eventId: 'EvOther' }))).toBe(200);
    await slack.waitForPost('the answer', (c) => inChannel('C300')(c) && textOf(c).includes('just once'));
    expect(await deliver(slack.messageEvent({ channel: 'C300', user: 'U3', text: 'next one', mention: true }))).toBe(200);
    await slack.waitForPost('the next answer', (c) => inChannel('C300')(c) && textOf(c).includes('next one'));
    expect(slack.posted().filter((c) => inChannel('C300')(c) && textOf(c).includes('just once'))).toHaveLength(1);
    expect((await platformRows(host, 'slack')).filter((r) => r.content.includes('just once'))).toHaveLength(1);
  });

  it('waits out a 429 for its Retry-After before posting again', async () => {
    slack.fail('chat.postMessage', 1, 429, 2);
    expect(await deliver(slack.messageEvent({ channel: 'C400', user: 'U4', text: 'slow down', mention: true }))).toBe(200);
    const answer = await slack.waitForPost('the answer', (c) => inChannel('C400')(c) && textOf(c).includes('slow down'));
    const refused = slack.calls.find((c) => c.method === 'chat.postMessage' && c.status === 429)!;
    expect(answer.at - refused.at).toBeGreaterThanOrEqual(2000);
  });

  it('splits an answer longer than Slack takes into several messages in the thread', async () => {
    const long = Array.from({ length: 300 }, (_, i) => `Paragraph ${i} says something worth reading twice.`).join('\n\n') + '\n\nLASTLINE';
    const event = slack.messageEvent({ channel: 'C500', user: 'U5', text: long, mention: true });
    expect(await deliver(event)).toBe(200);
    await slack.waitForPost('the last part', (c) => inChannel('C500')(c) && textOf(c).includes('LASTLINE'));
    const parts = slack.posted().filter(inChannel('C500'));
    expect(parts.length).toBeGreaterThanOrEqual(2);
    for (const part of parts) {
      expect(textOf(part).length).toBeLessThanOrEqual(12_000);
      expect(part.body.thread_ts).toBe(event.ts);
    }
  });

  it('asks a question with buttons; a press answers it', async () => {
    const event = slack.messageEvent({ channel: 'C600', user: 'U6', text: 'open a session', mention: true });
    expect(await deliver(event)).toBe(200);
    await slack.waitForPost('the first answer', (c) => inChannel('C600')(c) && textOf(c).includes('open a session'));
    const session = await sessionFor(host, 'slack', 'slack:C600');
    const db = openSessionDb(path.join(host.sessionDir(session.id), 'session.db'));
    insertOutbound(db, {
      kind: 'chat',
      content: {
        operation: 'ask_question',
        questionId: 'q-600',
        title: 'Merge?',
        question: 'Merge the branch now?',
        options: [
          { label: 'Merge', value: 'merge' },
          { label: 'Wait', value: 'wait' },
        ],
      },
      routing: { channelType: 'slack', platformId: 'slack:C600', threadId: `slack:C600:${event.ts}`, inReplyTo: null },
    });
    db.close();
    const question = await slack.waitForPost('the question', (c) => inChannel('C600')(c) && c.body.blocks !== undefined);
    expect(await deliver(slack.pressButton(question, 0, 'U6'))).toBe(200);
    const answer = await waitFor('the answer row', () =>
      inboundOf(host, session.id).find((r) => r.kind === 'system' && r.content.includes('question_response')),
    );
    expect(JSON.parse(answer.content)).toEqual({ type: 'question_response', questionId: 'q-600', selectedOption: 'merge', userId: 'slack:U6' });
    await waitFor('the question marked answered', () =>
      slack.calls.find((c) => c.method === 'chat.update' && String(c.body.markdown_text ?? c.body.text ?? '').includes('Merge')),
    );
    // A forged press is refused like any unsigned request.
    const forged = slack.pressButton(question, 1, 'U6');
    expect(await deliver({ body: forged.body, headers: { ...forged.headers, ...slack.sign(forged.body, 'wrong') } })).toBe(401);
  });

  it('keeps the answer while the Web API answers 500 for a while, and posts it afterwards', async () => {
    slack.fail('chat.postMessage', 3, 500);
    expect(await deliver(slack.messageEvent({ channel: 'C700', user: 'U7', text: 'bumpy road', mention: true }))).toBe(200);
    await slack.waitForPost('the answer', (c) => inChannel('C700')(c) && textOf(c).includes('bumpy road'), 30_000);
    expect(slack.calls.filter((c) => c.method === 'chat.postMessage' && c.status === 500)).toHaveLength(3);
    expect(host.child.exitCode).toBeNull();
  });
});
