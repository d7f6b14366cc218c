import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeGitHub, type FakeGitHub, type GitHubCall } from './support/fake-github.js';
import { stopAllHosts, type HostHandle } from './support/host-harness.js';
import { deliverWebhook, inboundOf, platformRows, sessionFor, startPlatformHost } from './support/platform-host.js';

/**
 * GitHub through a real host (mock provider) and a fake GitHub: signed issue_comment webhooks in at /webhooks/github,
 * REST comments out. A mention is answered in the same issue, other comments are kept as context, a bad signature is
 * refused with nothing stored, a redelivered webhook is answered once, a 429 waits for its Retry-After, a 500 run is
 * retried, and an answer over GitHub's 65,536 characters is split.
 */
let github: FakeGitHub;
let host: HostHandle;

const bodyOf = (call: GitHubCall): string => String(call.body.body ?? '');
const onIssue = (repo: string, number: number) => (call: GitHubCall) => call.path === `/repos/${repo}/issues/${number}/comments`;

const deliver = (event: { body: string; headers: Record<string, string> }): Promise<number> => deliverWebhook(host, 'github', event);

describe('GitHub (issue comment webhooks)', () => {
  beforeAll(async () => {
    github = await startFakeGitHub();
    host = await startPlatformHost('github', {
      GITHUB_TOKEN: github.token,
      GITHUB_WEBHOOK_SECRET: github.webhookSecret,
      GITHUB_API_URL: github.url,
      GITHUB_BOT_USERNAME: github.bot.login,
      PINCER_DELIVERY_RETRY_MS: '200',
    });
  });

  afterAll(async () => {
    expect(await host.stop()).toBe(0);
    expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
    await github.close();
  });

  it('answers a mention in the same issue; a comment without one is context', async () => {
    expect(await deliver(github.comment({ repo: 'acme/app', number: 1, user: 'ada', userId: 11, body: 'the build fails on node 20' }))).toBe(200);
    expect(await deliver(github.comment({ repo: 'acme/app', number: 1, user: 'ada', userId: 11, body: '@pincer-bot can you look?' }))).toBe(200);
    const answer = await github.waitForComment('the answer', (c) => onIssue('acme/app', 1)(c) && bodyOf(c).includes('can you look?'));
    expect(bodyOf(answer)).toContain('the build fails on node 20');
    const session = await sessionFor(host, 'github', 'github:acme/app');
    const rows = inboundOf(host, session.id).filter((r) => r.kind === 'chat-sdk');
    expect(rows.map((r) => r.trigger)).toEqual([0, 1]);
    expect(rows[1]).toMatchObject({ thread_id: 'github:acme/app:issue:1' });
    expect(JSON.parse(rows[1]!.content)).not.toHaveProperty('raw');
    expect(github.comments().filter(onIssue('acme/app', 1))).toHaveLength(1);
  });

  it('refuses a bad signature with 401 and stores nothing', async () => {
    expect(await deliver(github.comment({ repo: 'acme/app', number: 2, user: 'eve', userId: 66, body: '@pincer-bot forged' }, 'wrong-secret'))).toBe(401);
    const unsigned = github.comment({ repo: 'acme/app', number: 2, user: 'eve', userId: 66, body: '@pincer-bot forged' });
    const { 'x-hub-signature-256': _dropped, ...headers } = unsigned.headers;
    expect(await deliver({ body: unsigned.body, headers })).toBe(401);
    expect(await deliver(github.comment({ repo: 'acme/app', number: 2, user: 'bob', userId: 12, body: '@pincer-bot genuine' }))).toBe(200);
    await github.waitForComment('the genuine answer', (c) => onIssue('acme/app', 2)(c) && bodyOf(c).includes('genuine'));
    expect((await platformRows(host, 'github')).filter((r) => r.content.includes('forged'))).toEqual([]);
  });

  it('answers a webhook GitHub redelivers once', async () => {
    const event = github.comment({ repo: 'acme/app', number: 3, user: 'ada', userId: 11, body: '@pincer-bot once please' });
    expect(await deliver(event)).toBe(200);
    expect(await deliver(event)).toBe(200);
    await github.waitForComment('the answer', (c) => onIssue('acme/app', 3)(c) && bodyOf(c).includes('once please'));
    expect(await deliver(github.comment({ repo: 'acme/app', number: 3, user: 'ada', userId: 11, body: '@pincer-bot and next' }))).toBe(200);
    await github.waitForComment('the next answer', (c) => onIssue('acme/app', 3)(c) && bodyOf(c).includes('and next'));
    expect(github.comments().filter((c) => onIssue('acme/app', 3)(c) && bodyOf(c).includes('once please'))).toHaveLength(1);
  });

  it('waits out a 429 for its Retry-After, and retries 500s', async () => {
    github.fail(1, 429, 2);
    github.fail(2, 500);
    expect(await deliver(github.comment({ repo: 'acme/app', number: 4, user: 'ada', userId: 11, body: '@pincer-bot patience' }))).toBe(200);
    const answer = await github.waitForComment('the answer', (c) => onIssue('acme/app', 4)(c) && bodyOf(c).includes('patience'), 30_000);
    const limited = github.calls.find((c) => c.status === 429)!;
    expect(answer.at - limited.at).toBeGreaterThanOrEqual(2000);
    expect(github.calls.filter((c) => c.status === 500)).toHaveLength(2);
  });

  it('splits an answer over 65,536 characters into comments in the same issue', async () => {
    const long = '@pincer-bot ' + Array.from({ length: 1700 }, (_, i) => `Paragraph ${i} repeats a sentence for length.`).join('\n\n') + '\n\nFINALWORD';
    expect(await deliver(github.comment({ repo: 'acme/app', number: 5, user: 'ada', userId: 11, body: long }))).toBe(200);
    await github.waitForComment('the last part', (c) => onIssue('acme/app', 5)(c) && bodyOf(c).includes('FINALWORD'), 40_000);
    const parts = github.comments().filter(onIssue('acme/app', 5));
    expect(parts.length).toBeGreaterThanOrEqual(2);
    for (const part of parts) expect(bodyOf(part).length).toBeLessThanOrEqual(65_536);
  });
});
