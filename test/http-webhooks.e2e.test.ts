import { createHmac } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openSessionDb } from '../src/db/connection.js';
import { runCli } from './support/runner-harness.js';
import { startHost, stopAllHosts, type HostHandle } from './support/host-harness.js';

/**
 * Signed webhooks through the real `pincer host --http 0`: configured with `pincer webhook add`, they need no token,
 * only the sender's signature (GitHub, generic HMAC-SHA256, Stripe-style); a bad one is a 401 and nothing is stored.
 */
afterEach(async () => {
  expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
});

function pincerWebhook(home: string, ...args: string[]) {
  return runCli(['webhook', ...args, '--home', home]);
}

const hex = (secret: string, data: string) => createHmac('sha256', secret).update(data).digest('hex');

async function deliver(host: HostHandle, source: string, body: string, headers: Record<string, string>, query = '') {
  const res = await fetch(`http://127.0.0.1:${host.port}/v1/webhooks/${source}${query}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body,
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function sessionsByConversation(host: HostHandle): Promise<Map<string, string>> {
  const { sessions } = (await host.request('GET', '/v1/sessions')).body as { sessions: { id: string; platformId: string }[] };
  return new Map(sessions.map((s) => [s.platformId, s.id]));
}

/** The webhook rows of a conversation's session DB (none when it has no session). */
async function webhookRows(host: HostHandle, conversation: string): Promise<{ source: string; event: string; payload: unknown }[]> {
  const session = (await sessionsByConversation(host)).get(conversation);
  if (!session) return [];
  const db = openSessionDb(path.join(host.sessionDir(session), 'session.db'), { readonly: true });
  try {
    const rows = db.prepare(`SELECT content FROM messages_in WHERE kind = 'webhook' ORDER BY seq`).all() as { content: string }[];
    return rows.map((r) => JSON.parse(r.content) as { source: string; event: string; payload: unknown });
  } finally {
    db.close();
  }
}

describe('signed webhooks', () => {
  it('accepts GitHub, generic HMAC and Stripe-style signatures without a token, and stores nothing for a bad one', async () => {
    const host = await startHost();
    expect((await pincerWebhook(host.home, 'add', 'gh', '--scheme', 'github', '--secret', 'github-secret', '--conversation', 'repo')).status).toBe(0);
    expect((await pincerWebhook(host.home, 'add', 'acme', '--scheme', 'hmac', '--secret', 'acme-secret', '--header', 'X-Acme-Signature')).status).toBe(0);
    const generated = await pincerWebhook(host.home, 'add', 'pay', '--scheme', 'stripe', '--conversation', 'billing');
    expect(generated.status).toBe(0);
    const stripeSecret = generated.stdout.trim();
    expect(stripeSecret).toMatch(/^[0-9a-f]{48}$/);
    expect((await pincerWebhook(host.home, 'list')).stdout).toBe(
      'acme\thmac\tconversation webhook-acme\ngh\tgithub\tconversation repo\npay\tstripe\tconversation billing\n',
    );

    // refused: nothing stored, no session created for any of the three conversations
    const push = JSON.stringify({ ref: 'refs/heads/main', pusher: { name: 'ann' } });
    const now = Math.floor(Date.now() / 1000);
    const invoice = JSON.stringify({ id: 'evt_1', type: 'invoice.paid', data: { amount: 4200 } });
    const refusals: [string, string, Record<string, string>, RegExp][] = [
      ['gh', push, { 'X-GitHub-Event': 'push' }, /missing X-Hub-Signature-256 header/],
      ['gh', push, { 'X-GitHub-Event': 'push', 'X-Hub-Signature-256': `sha256=${hex('wrong-secret', push)}` }, /X-Hub-Signature-256 does not match the body/],
      ['gh', push, { 'X-GitHub-Event': 'push', 'X-Hub-Signature-256': `sha256=${hex('github-secret', push + ' ')}` }, /does not match/],
      ['gh', push, { 'X-GitHub-Event': 'push', Authorization: 'Bearer test-token-0123456789abcdef' }, /missing X-Hub-Signature-256/],
      ['acme', '{"deploy":1}', { 'X-Acme-Signature': 'sha256=zz' }, /X-Acme-Signature is not "sha256=" and 64 hex digits/],
      ['pay', invoice, { 'Stripe-Signature': `t=${now - 1000},v1=${hex(stripeSecret, `${now - 1000}.${invoice}`)}` }, /more than 300 s from now/],
      ['pay', invoice, { 'Stripe-Signature': `t=${now},v1=${hex('whsec_wrong', `${now}.${invoice}`)}` }, /Stripe-Signature does not match/],
      ['pay', invoice, { 'Stripe-Signature': `v1=${hex(stripeSecret, invoice)}` }, /needs t=<unix seconds> and v1=/],
    ];
    for (const [source, body, headers, message] of refusals) {
      const res = await deliver(host, source, body, headers);
      expect(res.status, String(message)).toBe(401);
      expect(res.body.error).toMatch(message);
      expect(res.body.error).toMatch(/nothing was stored/);
    }
    expect(await sessionsByConversation(host)).toEqual(new Map());

    // accepted: each reaches its conversation as a webhook message the agent answers
    const repo = host.stream('repo');
    const ok = await deliver(host, 'gh', push, { 'X-GitHub-Event': 'push', 'X-Hub-Signature-256': `sha256=${hex('github-secret', push)}` });
    expect(ok.status).toBe(202);
    const answer = await repo.waitFor('the agent saw the push', (e) => e.event === 'chat');
    expect(String(answer.data.text)).toContain('[WEBHOOK: gh/push]');
    expect(String(answer.data.text)).toContain('refs/heads/main');
    repo.close();

    const deploy = '{"event":"deploy"}';
    expect((await deliver(host, 'acme', deploy, { 'X-Acme-Signature': hex('acme-secret', deploy) })).status).toBe(202);
    const signed = `t=${now},v1=${hex('x'.repeat(16), 'x')},v1=${hex(stripeSecret, `${now}.${invoice}`)}`;
    expect((await deliver(host, 'pay', invoice, { 'Stripe-Signature': signed })).status).toBe(202);

    // a signed webhook goes only to its own conversation
    const elsewhere = await deliver(
      host,
      'gh',
      push,
      { 'X-GitHub-Event': 'push', 'X-Hub-Signature-256': `sha256=${hex('github-secret', push)}` },
      '?conversation=other',
    );
    expect(elsewhere.status).toBe(400);
    expect(elsewhere.body.field).toBe('conversation');

    expect(await webhookRows(host, 'repo')).toEqual([{ source: 'gh', event: 'push', payload: JSON.parse(push), signed: true }]);
    expect((await webhookRows(host, 'webhook-acme')).map((r) => r.event)).toEqual(['deploy']);
    expect(await webhookRows(host, 'billing')).toEqual([{ source: 'pay', event: 'invoice.paid', payload: JSON.parse(invoice), signed: true }]);

    // removed: the source needs a token again
    expect((await pincerWebhook(host.home, 'remove', 'gh')).status).toBe(0);
    expect((await deliver(host, 'gh', push, { 'X-GitHub-Event': 'push', 'X-Hub-Signature-256': `sha256=${hex('github-secret', push)}` })).status).toBe(401);
    expect(await host.stop()).toBe(0);
  });

  it.each([
    [['add', 'x', '--scheme', 'gitlab', '--secret', 'long-enough'], /webhook scheme "gitlab" \(known: github, hmac, stripe\)/],
    [['add', 'x', '--scheme', 'github', '--secret', 'short'], /webhook secret: at least 8 characters/],
    [['add', 'x', '--scheme', 'github', '--header', 'X-Sig'], /--header is for --scheme hmac only/],
    [['add', 'x', '--scheme', 'stripe', '--tolerance', 'soon'], /--tolerance: not a number of seconds: "soon"/],
    [['remove', 'ghost'], /no signed webhook named "ghost"/],
  ])('pincer webhook %j fails with one clear line and exit 2', async (args, message) => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-webhook-'));
    await pincerWebhook(home, 'add', 'first', '--scheme', 'github', '--secret', 'first-secret');
    const result = await pincerWebhook(home, ...args);
    expect(result.status).toBe(2);
    expect(result.stderr.trim()).toMatch(message);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
  });
});
