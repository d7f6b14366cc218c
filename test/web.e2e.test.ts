import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openSessionDb } from '../src/db/connection.js';
import { createSessionFolder } from '../src/db/layout.js';
import { insertOutbound } from '../src/db/messages.js';
import { closeBrowsers, launchBrowser, NO_CHROMIUM } from './support/browser.js';
import { closeFakeOpenAIs, startFakeOpenAI } from './support/fake-openai.js';
import { startHost, stopAllHosts, TEST_TOKEN, type HostHandle } from './support/host-harness.js';
import { BUILT_CLI } from './support/runner-harness.js';
import { waitFor } from './support/wait.js';

/**
 * The control page in a real Chromium against a real `pincer host` with the mock provider: log in, chat live,
 * answer a question with its buttons, see edits and reactions, manage tasks and runners, read usage and the doctor.
 * Screenshots go to a temp folder; with PINCER_SCREENSHOTS=1 to docs/screenshots/ (the README shows them), so a
 * test run never rewrites tracked files.
 */
const SHOTS =
  process.env.PINCER_SCREENSHOTS === '1'
    ? path.resolve(import.meta.dirname, '..', 'docs', 'screenshots')
    : fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-shots-'));
let browser: Browser;

beforeAll(async () => {
  if (!NO_CHROMIUM) browser = await launchBrowser();
});
afterAll(async () => {
  await closeBrowsers();
  if (process.env.PINCER_SCREENSHOTS !== '1') fs.rmSync(SHOTS, { recursive: true, force: true });
});
afterEach(async () => {
  await closeFakeOpenAIs();
  expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
});

async function shot(page: Page, name: string): Promise<void> {
  fs.mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`) });
}

async function logIn(host: HostHandle, options: { colorScheme?: 'light' | 'dark'; mobile?: boolean; token?: string } = {}): Promise<Page> {
  const context = await browser.newContext({
    colorScheme: options.colorScheme ?? 'light',
    viewport: options.mobile ? { width: 390, height: 780 } : { width: 1200, height: 1100 },
  });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (err) => errors.push(err.message));
  await page.goto(`http://127.0.0.1:${host.port}/`);
  await page.getByLabel('Access token').fill(options.token ?? TEST_TOKEN);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('navigation', { name: 'Views' }).waitFor();
  expect(errors).toEqual([]);
  return page;
}

const outbound = (host: HostHandle, sessionId: string) => openSessionDb(path.join(host.sessionDir(sessionId), 'session.db'));
const routing = (conversation: string, inReplyTo: string) => ({ channelType: 'http', platformId: conversation, threadId: null, inReplyTo });

describe.skipIf(NO_CHROMIUM)(`the web control page${NO_CHROMIUM ? ` (skipped: ${NO_CHROMIUM})` : ''}`, { timeout: 120_000 }, () => {
  it('refuses a wrong token, logs in with an HttpOnly SameSite=Strict cookie, and serves the page under a strict CSP', async () => {
    const host = await startHost();
    const res = await fetch(`http://127.0.0.1:${host.port}/`);
    expect(res.headers.get('content-security-policy')).toMatch(/script-src 'self'/);
    expect(res.headers.get('content-security-policy')).not.toMatch(/unsafe-inline/);
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`http://127.0.0.1:${host.port}/`);
    await page.getByLabel('Access token').fill('not-the-token');
    await page.getByRole('button', { name: 'Log in' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toMatch(/wrong token/);
    await shot(page, 'login');
    await page.getByLabel('Access token').fill(TEST_TOKEN);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('navigation', { name: 'Views' }).waitFor();
    const [cookie] = await context.cookies();
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict' });
    expect(await page.evaluate('document.cookie')).toBe('');
    // The cookie does not work from another origin: a state-changing request with a foreign Origin is refused.
    const forged = await fetch(`http://127.0.0.1:${host.port}/v1/conversations/web/messages`, {
      method: 'POST',
      headers: { Cookie: `${cookie!.name}=${cookie!.value}`, Origin: 'http://evil.example', 'Content-Type': 'application/json' },
      body: JSON.stringify({ text: 'forged' }),
    });
    expect(forged.status).toBe(403);
    await context.close();
    expect(await host.stop()).toBe(0);
  });

  it('chats live: a sent message is answered on the stream, edits, reactions and a question with buttons; HTML stays text', async () => {
    const host = await startHost();
    const page = await logIn(host);
    await page.getByLabel('Open a conversation').fill('web');
    await page.getByRole('button', { name: 'Open', exact: true }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toBe('live');
    // the open conversation is highlighted in the list, before and after the host lists it
    const listed = page.getByRole('list').filter({ has: page.getByRole('button', { name: /^web/ }) });
    const current = listed.getByRole('button', { name: /^web/ });
    const accent = 'rgb(194, 65, 12)';
    expect(await current.getAttribute('aria-current')).toBe('page');
    expect(await current.evaluate((b) => b.ownerDocument.defaultView!.getComputedStyle(b).backgroundColor)).toBe(accent);
    await page.getByLabel('Message').fill('hello from the **browser**');
    await page.getByRole('button', { name: 'Send' }).click();
    const reply = page.locator('.message:not(.mine)').filter({ hasText: 'echo:' });
    await reply.first().waitFor();
    expect(await reply.first().textContent()).toContain('hello from the browser');
    // the user's own message is rendered as markdown, like the agent's, and shown once
    const mine = page.locator('.message.mine');
    expect(await mine.count()).toBe(1);
    expect(await mine.locator('strong').textContent()).toBe('browser');

    const { conversations } = (await host.request('GET', '/v1/conversations')).body as { conversations: { id: string; sessions: { id: string }[] }[] };
    const sessionId = conversations.find((c) => c.id === 'web')!.sessions[0]!.id;
    const db = outbound(host, sessionId);
    const trigger = (db.prepare(`SELECT id FROM messages_in WHERE kind = 'chat' ORDER BY seq DESC LIMIT 1`).get() as { id: string }).id;
    // An agent message with markdown, later edited and reacted to.
    const { seq } = insertOutbound(db, {
      kind: 'chat',
      content: { text: 'Deploying **v2**, see the [notes](https://example.com/notes)' },
      routing: routing('web', trigger),
    });
    await page.locator('.message').filter({ hasText: 'Deploying' }).waitFor();
    insertOutbound(db, {
      kind: 'chat',
      content: { operation: 'edit', messageId: seq, text: 'Deployed **v2**, see the [notes](https://example.com/notes)' },
      routing: routing('web', trigger),
    });
    insertOutbound(db, { kind: 'chat', content: { operation: 'reaction', messageId: seq, emoji: '✔' }, routing: routing('web', trigger) });
    const edited = page.locator('.message').filter({ hasText: 'Deployed v2' });
    await edited.waitFor();
    expect(await edited.locator('a').getAttribute('href')).toBe('https://example.com/notes');
    await edited.getByLabel('Reactions').filter({ hasText: '✔' }).waitFor();

    // What an agent could write: markup and a script URL. Neither may run or become an element.
    const attack = '<img src=x onerror="window.__pwned=1"> and [click](javascript:window.__pwned=2) and **bold**';
    insertOutbound(db, { kind: 'chat', content: { text: attack }, routing: routing('web', trigger) });
    const hostile = page.locator('.message').filter({ hasText: 'onerror' });
    await hostile.waitFor();
    expect(await hostile.locator('img').count()).toBe(0);
    expect(await hostile.locator('a').count()).toBe(0);
    expect(await hostile.locator('strong').textContent()).toBe('bold');
    expect(await page.evaluate('window.__pwned')).toBeUndefined();

    insertOutbound(db, {
      kind: 'chat',
      content: {
        operation: 'ask_question',
        questionId: 'q-web',
        title: 'Deploy?',
        question: 'Ship version 2 now?',
        options: [
          { label: 'Ship it', value: 'yes' },
          { label: 'Wait', value: 'no' },
        ],
      },
      routing: routing('web', trigger),
    });
    await page.getByRole('button', { name: 'Ship it' }).waitFor();
    await page.getByRole('button', { name: /^web/ }).filter({ hasText: 'last ' }).waitFor();
    expect(await current.evaluate((b) => b.ownerDocument.defaultView!.getComputedStyle(b).backgroundColor)).toBe(accent);
    await shot(page, 'chat');
    await page.getByRole('button', { name: 'Ship it' }).click();
    await page.getByText('Answered: Ship it').waitFor();
    const answer = await waitFor(
      'the answer row',
      () => db.prepare(`SELECT content FROM messages_in WHERE kind = 'system' AND content LIKE '%question_response%'`).get() as { content: string } | undefined,
    );
    expect(JSON.parse(answer.content)).toMatchObject({ type: 'question_response', questionId: 'q-web', selectedOption: 'yes' });
    db.close();

    // After a reload the user's own messages are back, in order with the agent's (one posted by another client too);
    // the API's history has them only when asked (?sent=1), so a bridge following the stream never gets its posts back.
    await host.request('POST', '/v1/conversations/web/messages', { text: 'and from *curl*', sender: 'bridge' });
    await page.reload();
    await page.getByRole('button', { name: /^web/ }).click();
    await page.locator('.message.mine').filter({ hasText: 'and from curl' }).waitFor();
    const order = await page.locator('.message').evaluateAll((all) => all.map((m) => `${m.className}: ${m.textContent!.slice(0, 40)}`));
    const firstMine = order.findIndex((line) => line.includes('mine') && line.includes('hello from the browser'));
    const firstEcho = order.findIndex((line) => line.includes('echo:'));
    expect(firstMine, order.join('\n')).toBeGreaterThanOrEqual(0);
    expect(firstMine, order.join('\n')).toBeLessThan(firstEcho);
    expect(order.filter((line) => line.includes('mine'))).toHaveLength(2);
    expect(await page.locator('.message.mine').first().locator('strong').textContent()).toBe('browser');
    expect(await page.locator('.message.mine').last().locator('em').textContent()).toBe('curl');
    const history = async (query: string): Promise<string[]> =>
      ((await host.request('GET', `/v1/conversations/web/events?after=0${query}`)).body.events as { type: string }[]).map((e) => e.type);
    expect(await history('')).not.toContain('sent');
    expect((await history('&sent=1')).filter((t) => t === 'sent')).toHaveLength(2);
    await page.context().close();
    expect(await host.stop()).toBe(0);
  });

  it('shows each tool call of the agent live, running then done or failed, its hostile name and arguments as text', async () => {
    // the built-in runtime in a runner child process, on a scripted model; the first tool waits for the test's file,
    // so its running line is seen without timing
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-web-tools-'));
    const release = path.join(dir, 'release');
    const fake = await startFakeOpenAI();
    fake.script(
      { call: 'bash', args: { command: `: '<img src=x onerror="window.__pwned=1">'; while [ ! -e ${release} ]; do sleep 0.1; done` } },
      { call: '<img src=y onerror="window.__pwned=2">', args: { path: '<script>window.__pwned=3</script>' } },
      { text: 'tools ran' },
    );
    const host = await startHost({
      AGENT_PROVIDER: 'pincer',
      PINCER_MODEL: 'local/qwen3:8b',
      OPENAI_BASE_URL: fake.baseUrl,
      PINCER_MODEL_MAX_RETRIES: '0',
      PINCER_RUNNER: 'process',
    });
    const page = await logIn(host);
    await page.getByLabel('Open a conversation').fill('tools');
    await page.getByRole('button', { name: 'Open', exact: true }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toBe('live');
    await page.getByLabel('Message').fill('run them');
    await page.getByRole('button', { name: 'Send' }).click();
    const lines = page.locator('.messages .tool-line');
    const bash = lines.filter({ has: page.locator('.tool-name', { hasText: /^bash$/ }) });
    await bash.and(page.locator('.running')).waitFor();
    expect(await bash.locator('.tool-args').textContent()).toBe(`: '<img src=x onerror="window.__pwned=1">'; while [ ! -e ${release} ]; do sleep 0.1; done`);
    expect(await bash.locator('.tool-state').textContent()).toMatch(/^running \d+ s$/);
    fs.writeFileSync(release, '');
    await page.locator('.message:not(.mine)').filter({ hasText: 'tools ran' }).waitFor();
    await bash.and(page.locator('.ok')).waitFor();
    expect(await bash.locator('.tool-state').textContent()).toMatch(/^done \d+(\.\d)? s$/);
    // the unknown tool the model made up: a failed call, its name and arguments shown as the text they are
    const made = lines.filter({ hasText: 'onerror="window.__pwned=2"' });
    await made.and(page.locator('.error')).waitFor();
    expect(await made.locator('.tool-name').textContent()).toBe('<img src=y onerror="window.__pwned=2">');
    expect(await made.locator('.tool-args').textContent()).toBe('<script>window.__pwned=3</script>');
    expect(await made.locator('.tool-state').textContent()).toMatch(/^failed after \d+(\.\d)? s$/);
    expect(await page.locator('.messages img, .messages script').count()).toBe(0);
    expect(await page.evaluate('window.__pwned')).toBeUndefined();
    // in order: the user's message, the two calls, the answer
    const order = await page.locator('.messages > li').evaluateAll((all) => all.map((li) => li.className));
    expect(order).toEqual(['message mine', 'tool-line ok', 'tool-line error', 'message']);
    await page.context().close();
    expect(await host.stop()).toBe(0);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('pauses, resumes and cancels a task; stops and restarts a runner and shows its log; shows the doctor', async () => {
    const host = await startHost();
    const stream = host.stream('ops');
    await host.request('POST', '/v1/conversations/ops/messages', { text: 'warm up' });
    // The runner has started, answered and logged before the page asks for its log.
    await stream.waitFor('the answer', (e) => e.event === 'chat');
    stream.close();
    const inAnHour = new Date(Date.now() + 3600_000).toISOString();
    const scheduled = await host.request('POST', '/v1/conversations/ops/tasks', {
      prompt: 'water the plants',
      processAfter: inAnHour,
      recurrence: '0 9 * * 1-5',
    });
    expect(scheduled.status).toBe(202);
    const page = await logIn(host);

    await page.getByRole('button', { name: 'Tasks' }).click();
    await page.getByRole('button', { name: 'Pause water the plants' }).click();
    await page.getByRole('button', { name: 'Resume water the plants' }).waitFor();
    const taskStatus = async (): Promise<string | undefined> =>
      ((await host.request('GET', '/v1/tasks')).body.tasks as { prompt: string; status: string }[]).find((t) => t.prompt === 'water the plants')?.status;
    expect(await taskStatus()).toBe('paused');
    await shot(page, 'tasks');
    await page.getByRole('button', { name: 'Cancel water the plants' }).click();
    await expect.poll(taskStatus).toBeUndefined();
    // the empty list's hint reads as written (no `&lt;id&gt;` left by the template)
    await expect.poll(() => page.getByText('No active tasks').textContent()).toContain('POST /v1/conversations/<id>/tasks.');

    await page.getByRole('button', { name: 'Sessions' }).click();
    await page.getByRole('cell', { name: 'http:ops' }).waitFor();
    await page.getByRole('button', { name: 'Show the log of ops' }).click();
    await expect.poll(() => page.locator('pre.log').textContent()).toMatch(/\[runner\]/);
    await shot(page, 'sessions');
    const runnerOf = async (): Promise<unknown> =>
      ((await host.request('GET', '/v1/sessions')).body.sessions as { platformId: string; runner: unknown }[]).find((s) => s.platformId === 'ops')?.runner;
    await expect.poll(runnerOf, { timeout: 20_000 }).not.toBeNull();
    await page.getByRole('button', { name: 'Stop the runner of ops' }).click();
    await expect.poll(runnerOf, { timeout: 20_000 }).toBeNull();
    await page.getByRole('cell', { name: 'stopped' }).waitFor();
    await page.getByRole('button', { name: 'Restart the runner of ops' }).click();
    await expect.poll(runnerOf, { timeout: 20_000 }).not.toBeNull();

    // A session that cannot start: its line is the first thing the Doctor view shows, above the full report.
    const broken = createSessionFolder(path.join(host.home, 'sessions', 'broken'));
    fs.writeFileSync(broken.config, JSON.stringify({ provider: 'claud' }));
    await page.getByRole('button', { name: 'Doctor' }).click();
    await page.getByText('providers in this environment').waitFor();
    const problems = page.getByRole('list', { name: 'Problems' });
    expect(await problems.textContent()).toContain('session broken: unknown provider "claud"');
    expect((await problems.boundingBox())!.y).toBeLessThan((await page.locator('pre.log').boundingBox())!.y);
    await page.context().close();
    expect(await host.stop()).toBe(0);
  });

  it('charts tokens per day and cost per model from the usage ledger', async () => {
    const host = await startHost();
    const stream = host.stream('costs');
    await host.request('POST', '/v1/conversations/costs/messages', { text: 'spend some tokens' });
    await stream.waitFor('the answer', (e) => e.event === 'chat');
    await expect.poll(async () => ((await host.request('GET', '/v1/usage?by=day')).body.rows as unknown[]).length, { timeout: 20_000 }).toBeGreaterThan(0);
    const page = await logIn(host);
    await page.getByRole('button', { name: 'Usage' }).click();
    const chart = page.getByRole('list', { name: 'Tokens per day' });
    await chart.waitFor();
    expect(await chart.locator('.bar').count()).toBe(1);
    expect(await page.getByRole('list', { name: 'Cost per model (USD)' }).locator('.bar').count()).toBeGreaterThan(0);
    await page.getByRole('cell', { name: 'main' }).waitFor();
    await shot(page, 'usage');
    // Every key and value of the charts is whole and inside its chart, on a wide screen and on a phone.
    for (const width of [1200, 700, 390, 320]) {
      await page.setViewportSize({ width, height: 900 });
      // (a string: the test's TypeScript has no DOM types)
      const clipped = await page.evaluate(`[...document.querySelectorAll('.chart-key, .chart-value')].flatMap((el) => {
        const box = el.getBoundingClientRect();
        const chart = el.closest('figure').getBoundingClientRect();
        const whole = el.scrollWidth <= el.clientWidth + 1 && box.left >= chart.left && box.right <= chart.right + 0.5;
        return whole && el.textContent.trim() !== '' ? [] : [el.textContent + ' (' + box.left + '-' + box.right + ' in ' + chart.left + '-' + chart.right + ')'];
      })`);
      expect(clipped, `at ${width} px`).toEqual([]);
    }
    stream.close();
    await page.context().close();
    expect(await host.stop()).toBe(0);
  });

  it('a token limited to one conversation sees and controls only its sessions, and not the doctor', async () => {
    const host = await startHost();
    const made = spawnSync(process.execPath, [BUILT_CLI, 'token', 'create', 'ann-bridge', '--conversation', 'ann', '--home', host.home], {
      encoding: 'utf8',
      timeout: 15_000,
    });
    expect(made.status, made.stderr).toBe(0);
    const scoped = made.stdout.trim();
    for (const conversation of ['ann', 'bob'])
      expect((await host.request('POST', `/v1/conversations/${conversation}/messages`, { text: 'hi' })).status).toBe(202);
    const sessions = (await host.request('GET', '/v1/sessions')).body.sessions as { id: string; platformId: string }[];
    const bobSession = sessions.find((s) => s.platformId === 'bob')!.id;
    const page = await logIn(host, { token: scoped });
    await page.getByRole('button', { name: 'Sessions' }).click();
    await page.getByRole('cell', { name: 'http:ann' }).waitFor();
    expect(await page.getByRole('cell', { name: 'http:bob' }).count()).toBe(0);
    const asBridge = { token: scoped };
    expect((await host.request('POST', `/v1/sessions/${bobSession}/stop`, {}, asBridge)).status).toBe(404);
    expect((await host.request('GET', `/v1/sessions/${bobSession}/log`, undefined, asBridge)).status).toBe(404);
    expect((await host.request('GET', '/v1/doctor', undefined, asBridge)).status).toBe(403);
    await page.context().close();
    expect(await host.stop()).toBe(0);
  });

  it('reads well on a phone in the dark', async () => {
    const host = await startHost();
    const page = await logIn(host, { colorScheme: 'dark', mobile: true });
    const background = await page.evaluate('getComputedStyle(document.body).backgroundColor');
    expect(background).toBe('rgb(19, 19, 22)');
    const overflow = await page.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth');
    expect(Number(overflow)).toBeLessThanOrEqual(0);
    await shot(page, 'phone-dark');
    await page.context().close();
    expect(await host.stop()).toBe(0);
  });
});
