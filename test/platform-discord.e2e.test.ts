import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSessionDb } from '../src/db/connection.js';
import { insertOutbound } from '../src/db/messages.js';
import { startFakeDiscord, type DiscordCall, type FakeDiscord } from './support/fake-discord.js';
import { stopAllHosts, type HostHandle } from './support/host-harness.js';
import { deliverWebhook, inboundOf, platformRows, sessionFor, startPlatformHost } from './support/platform-host.js';
import { waitFor } from './support/wait.js';

/**
 * Discord through a real host (mock provider) and a fake Discord: messages arrive as the adapter's gateway listener
 * forwards them (bot-token header), button presses as Ed25519-signed interactions, REST out. Answered in the same
 * channel, a forged interaction or gateway event refused with nothing stored, a redelivered event answered once, a
 * 429 waited out for its retry_after, 500s retried, a long answer split at 2,000, question buttons answer.
 */
let discord: FakeDiscord;
let host: HostHandle;

const contentOf = (call: DiscordCall): string => String(call.body.content ?? '');
const inChannel = (channelId: string) => (call: DiscordCall) => call.path === `/channels/${channelId}/messages`;

const deliver = (event: { body: string; headers: Record<string, string> }): Promise<number> => deliverWebhook(host, 'discord', event);

describe('Discord (forwarded gateway events and interactions)', () => {
  beforeAll(async () => {
    discord = await startFakeDiscord();
    host = await startPlatformHost('discord', {
      DISCORD_BOT_TOKEN: discord.botToken,
      DISCORD_PUBLIC_KEY: discord.publicKey,
      DISCORD_APPLICATION_ID: discord.applicationId,
      DISCORD_API_URL: discord.url,
      PINCER_DELIVERY_RETRY_MS: '200',
    });
  });

  afterAll(async () => {
    expect(await host.stop()).toBe(0);
    expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
    await discord.close();
  });

  it('answers a direct message in the same channel and stores it without raw', async () => {
    expect(await deliver(discord.gatewayMessage({ channelId: '100', userId: '501', content: 'hello discord' }))).toBe(200);
    const answer = await discord.waitForPost('the answer', (c) => inChannel('100')(c) && contentOf(c).includes('hello discord'));
    expect(contentOf(answer)).toContain('echo:');
    const session = await sessionFor(host, 'discord', 'discord:@me:100');
    const row = inboundOf(host, session.id).find((r) => r.kind === 'chat-sdk')!;
    expect(JSON.parse(row.content)).toMatchObject({ text: 'hello discord', author: { userId: '501' } });
    expect(JSON.parse(row.content)).not.toHaveProperty('raw');
  });

  it('answers a mention in a server channel in the thread it opens', async () => {
    expect(await deliver(discord.gatewayMessage({ channelId: '200', guildId: '77', userId: '502', content: 'what now?', mention: true }))).toBe(200);
    const thread = await waitFor('the thread', () =>
      discord.calls.find((c) => c.method === 'POST' && /^\/channels\/200\/messages\/\d+\/threads$/.test(c.path)),
    );
    const threadId = String(thread.result?.id);
    await discord.waitForPost('the answer in the thread', (c) => inChannel(threadId)(c) && contentOf(c).includes('what now?'));
  });

  it('refuses a forged gateway event and a forged interaction with 401 and stores nothing', async () => {
    expect(await deliver(discord.gatewayMessage({ channelId: '300', userId: '503', content: 'forged text' }, 'not-the-token'))).toBe(401);
    const unsigned = discord.gatewayMessage({ channelId: '300', userId: '503', content: 'forged text' });
    const { 'x-discord-gateway-token': _dropped, ...headers } = unsigned.headers;
    expect(await deliver({ body: unsigned.body, headers })).toBe(401);
    expect(await deliver(discord.gatewayMessage({ channelId: '300', userId: '503', content: 'genuine text' }))).toBe(200);
    await discord.waitForPost('the genuine answer', (c) => inChannel('300')(c) && contentOf(c).includes('genuine text'));
    expect((await platformRows(host, 'discord')).filter((r) => r.content.includes('forged'))).toEqual([]);
  });

  it('answers an event delivered twice once', async () => {
    const event = discord.gatewayMessage({ channelId: '400', userId: '504', content: 'say it once', id: '4000000000000000001' });
    expect(await deliver(event)).toBe(200);
    expect(await deliver(event)).toBe(200);
    await discord.waitForPost('the answer', (c) => inChannel('400')(c) && contentOf(c).includes('say it once'));
    expect(await deliver(discord.gatewayMessage({ channelId: '400', userId: '504', content: 'and this' }))).toBe(200);
    await discord.waitForPost('the next answer', (c) => inChannel('400')(c) && contentOf(c).includes('and this'));
    expect(discord.posted().filter((c) => inChannel('400')(c) && contentOf(c).includes('say it once'))).toHaveLength(1);
  });

  it('waits out a 429 for its retry_after, and retries 500s', async () => {
    discord.fail(1, 429, 2);
    discord.fail(2, 500);
    expect(await deliver(discord.gatewayMessage({ channelId: '500', userId: '505', content: 'take a breath' }))).toBe(200);
    const answer = await discord.waitForPost('the answer', (c) => inChannel('500')(c) && contentOf(c).includes('take a breath'), 30_000);
    const limited = discord.calls.find((c) => c.status === 429)!;
    expect(answer.at - limited.at).toBeGreaterThanOrEqual(2000);
    expect(discord.calls.filter((c) => c.status === 500)).toHaveLength(2);
  });

  it('splits a long answer into messages of at most 2,000 characters', async () => {
    const long = Array.from({ length: 60 }, (_, i) => `Line ${i} of a long message that goes on and on.`).join('\n\n') + '\n\nTHEEND';
    expect(await deliver(discord.gatewayMessage({ channelId: '600', userId: '506', content: long }))).toBe(200);
    await discord.waitForPost('the last part', (c) => inChannel('600')(c) && contentOf(c).includes('THEEND'));
    const parts = discord.posted().filter(inChannel('600'));
    expect(parts.length).toBeGreaterThanOrEqual(2);
    for (const part of parts) expect(contentOf(part).length).toBeLessThanOrEqual(2000);
  });

  it('asks a question with buttons; a signed press answers it, a forged one is refused', async () => {
    expect(await deliver(discord.gatewayMessage({ channelId: '700', userId: '507', content: 'begin' }))).toBe(200);
    await discord.waitForPost('the first answer', (c) => inChannel('700')(c) && contentOf(c).includes('begin'));
    const session = await sessionFor(host, 'discord', 'discord:@me:700');
    const db = openSessionDb(path.join(host.sessionDir(session.id), 'session.db'));
    insertOutbound(db, {
      kind: 'chat',
      content: {
        operation: 'ask_question',
        questionId: 'q-dc',
        title: 'Release?',
        question: 'Cut the release?',
        options: [
          { label: 'Cut it', value: 'cut' },
          { label: 'Later', value: 'later' },
        ],
      },
      routing: { channelType: 'discord', platformId: 'discord:@me:700', threadId: null, inReplyTo: null },
    });
    db.close();
    const question = await discord.waitForPost(
      'the question',
      (c) => inChannel('700')(c) && Array.isArray(c.body.components) && (c.body.components as unknown[]).length > 0,
    );
    expect(await deliver(discord.pressButton(question, 0, '507', true))).toBe(401);
    expect(await deliver(discord.pressButton(question, 0, '507'))).toBe(200);
    const answer = await waitFor('the answer row', () =>
      inboundOf(host, session.id).find((r) => r.kind === 'system' && r.content.includes('question_response')),
    );
    expect(JSON.parse(answer.content)).toEqual({ type: 'question_response', questionId: 'q-dc', selectedOption: 'cut', userId: 'discord:507' });
  });
});
