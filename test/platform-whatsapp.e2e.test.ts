import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSessionDb } from '../src/db/connection.js';
import { insertOutbound } from '../src/db/messages.js';
import { startFakeWhatsApp, type FakeWhatsApp, type GraphCall } from './support/fake-whatsapp.js';
import { stopAllHosts, type HostHandle } from './support/host-harness.js';
import { deliverWebhook, inboundOf, platformRows, sessionFor, startPlatformHost } from './support/platform-host.js';
import { waitFor } from './support/wait.js';

/**
 * WhatsApp through a real host (mock provider) and a fake Cloud API: the webhook's GET verification, signed
 * notifications in at /webhooks/whatsapp, Graph API sends out. Answered in the same chat, a bad signature refused
 * with nothing stored, a redelivered notification answered once, a 429 and a run of 500s retried until delivered,
 * a long answer split at 4,096, and question buttons (reply buttons) answering the question.
 */
let whatsapp: FakeWhatsApp;
let host: HostHandle;

const textOf = (call: GraphCall): string => String((call.body.text as { body?: string } | undefined)?.body ?? '');
const to = (number: string) => (call: GraphCall) => call.body.to === number;

const deliver = (event: { body: string; headers: Record<string, string> }): Promise<number> => deliverWebhook(host, 'whatsapp', event);

describe('WhatsApp (Cloud API webhook)', () => {
  beforeAll(async () => {
    whatsapp = await startFakeWhatsApp();
    host = await startPlatformHost('whatsapp', {
      WHATSAPP_ACCESS_TOKEN: whatsapp.accessToken,
      WHATSAPP_APP_SECRET: whatsapp.appSecret,
      WHATSAPP_PHONE_NUMBER_ID: whatsapp.phoneNumberId,
      WHATSAPP_VERIFY_TOKEN: whatsapp.verifyToken,
      WHATSAPP_API_URL: whatsapp.url,
      PINCER_DELIVERY_RETRY_MS: '200',
    });
  });

  afterAll(async () => {
    expect(await host.stop()).toBe(0);
    expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
    await whatsapp.close();
  });

  it('answers the verification challenge only with the verify token', async () => {
    const ok = await host.request('GET', `/webhooks/whatsapp?hub.mode=subscribe&hub.verify_token=${whatsapp.verifyToken}&hub.challenge=4242`, undefined, {
      token: null,
    });
    expect(ok).toMatchObject({ status: 200, body: 4242 });
    const wrong = await host.request('GET', '/webhooks/whatsapp?hub.mode=subscribe&hub.verify_token=guess&hub.challenge=4242', undefined, { token: null });
    expect(wrong.status).toBe(403);
  });

  it('answers a message in the same chat and stores it without raw', async () => {
    expect(await deliver(whatsapp.userSends({ from: '4915100000001', text: 'hello whatsapp' }))).toBe(200);
    const answer = await whatsapp.waitForSent('the answer', (c) => to('4915100000001')(c) && textOf(c).includes('hello whatsapp'));
    expect(textOf(answer)).toContain('echo:');
    const session = await sessionFor(host, 'whatsapp', `whatsapp:${whatsapp.phoneNumberId}:4915100000001`);
    const row = inboundOf(host, session.id).find((r) => r.kind === 'chat-sdk')!;
    expect(JSON.parse(row.content)).toMatchObject({ text: 'hello whatsapp', author: { userId: '4915100000001' } });
    expect(JSON.parse(row.content)).not.toHaveProperty('raw');
  });

  it('refuses a bad signature with 401 and stores nothing', async () => {
    expect(await deliver(whatsapp.userSends({ from: '4915100000002', text: 'forged message' }, 'not-the-secret'))).toBe(401);
    const unsigned = whatsapp.userSends({ from: '4915100000002', text: 'forged message' });
    expect(await deliver({ body: unsigned.body, headers: { 'content-type': 'application/json' } })).toBe(401);
    expect(await deliver(whatsapp.userSends({ from: '4915100000002', text: 'genuine message' }))).toBe(200);
    await whatsapp.waitForSent('the genuine answer', (c) => to('4915100000002')(c) && textOf(c).includes('genuine message'));
    expect((await platformRows(host, 'whatsapp')).filter((r) => r.content.includes('forged'))).toEqual([]);
  });

  it('answers a notification Meta delivers twice once', async () => {
    const event = whatsapp.userSends({ from: '4915100000003', text: 'once only' });
    expect(await deliver(event)).toBe(200);
    expect(await deliver(event)).toBe(200);
    await whatsapp.waitForSent('the answer', (c) => to('4915100000003')(c) && textOf(c).includes('once only'));
    expect(await deliver(whatsapp.userSends({ from: '4915100000003', text: 'then this' }))).toBe(200);
    await whatsapp.waitForSent('the next answer', (c) => to('4915100000003')(c) && textOf(c).includes('then this'));
    expect(whatsapp.sent().filter((c) => to('4915100000003')(c) && textOf(c).includes('once only'))).toHaveLength(1);
  });

  it('retries a 429 and a run of 500s, then delivers', async () => {
    whatsapp.fail(1, 429);
    whatsapp.fail(2, 500);
    expect(await deliver(whatsapp.userSends({ from: '4915100000004', text: 'try again' }))).toBe(200);
    await whatsapp.waitForSent('the answer', (c) => to('4915100000004')(c) && textOf(c).includes('try again'), 30_000);
    expect(whatsapp.calls.filter((c) => c.status === 429)).toHaveLength(1);
    expect(whatsapp.calls.filter((c) => c.status === 500)).toHaveLength(2);
  });

  it('splits a long answer into messages of at most 4,096 characters', async () => {
    const long = Array.from({ length: 120 }, (_, i) => `Line ${i} of a long message that goes on and on.`).join('\n\n') + '\n\nENDMARK';
    expect(await deliver(whatsapp.userSends({ from: '4915100000005', text: long }))).toBe(200);
    await whatsapp.waitForSent('the last part', (c) => to('4915100000005')(c) && textOf(c).includes('ENDMARK'));
    const parts = whatsapp.sent().filter(to('4915100000005'));
    expect(parts.length).toBeGreaterThanOrEqual(2);
    for (const part of parts) expect(textOf(part).length).toBeLessThanOrEqual(4096);
  });

  it('asks a question with reply buttons; a tap answers it', async () => {
    expect(await deliver(whatsapp.userSends({ from: '4915100000006', text: 'start here' }))).toBe(200);
    await whatsapp.waitForSent('the first answer', (c) => to('4915100000006')(c) && textOf(c).includes('start here'));
    const session = await sessionFor(host, 'whatsapp', `whatsapp:${whatsapp.phoneNumberId}:4915100000006`);
    const db = openSessionDb(path.join(host.sessionDir(session.id), 'session.db'));
    insertOutbound(db, {
      kind: 'chat',
      content: {
        operation: 'ask_question',
        questionId: 'q-wa',
        title: 'Order',
        question: 'Ship the order?',
        options: [
          { label: 'Ship it', value: 'ship' },
          { label: 'Hold', value: 'hold' },
        ],
      },
      routing: { channelType: 'whatsapp', platformId: `whatsapp:${whatsapp.phoneNumberId}:4915100000006`, threadId: null, inReplyTo: null },
    });
    db.close();
    const question = await whatsapp.waitForSent('the question', (c) => to('4915100000006')(c) && c.body.type === 'interactive');
    expect(await deliver(whatsapp.tapButton(question, 1, '4915100000006'))).toBe(200);
    const answer = await waitFor('the answer row', () =>
      inboundOf(host, session.id).find((r) => r.kind === 'system' && r.content.includes('question_response')),
    );
    expect(JSON.parse(answer.content)).toEqual({ type: 'question_response', questionId: 'q-wa', selectedOption: 'hold', userId: 'whatsapp:4915100000006' });
  });
});
