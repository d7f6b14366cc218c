import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { killsScenario } from '../bench/fault.js';
import { packageRoot } from '../src/container/config.js';
import { ensureRunnerImage } from '../src/container/index.js';
import { openSessionDb } from '../src/db/connection.js';
import { turnUsageAfter } from '../src/db/usage.js';
import { bwrapWorks } from '../src/host/runner-kind.js';
import { cleanupClaude } from './support/claude.js';
import { closeFakeOpenAIs, startFakeOpenAI } from './support/fake-openai.js';
import { startFakeTelegram, type FakeTelegram, type TelegramCall } from './support/fake-telegram.js';
import { dockerCli, dockerdUnavailable, startPrivateDockerd, type PrivateDockerd } from './support/dockerd.js';
import { startHost, stopAllHosts, type HostHandle } from './support/host-harness.js';
import { inboundOf, outboundOf, sessionFor } from './support/platform-host.js';
import { PROVIDER_CASES } from './support/provider-fakes.js';
import { BUILT_CLI } from './support/runner-harness.js';
import { startOtlpReceiver } from './support/otlp-receiver.js';
import { waitFor } from './support/wait.js';

/**
 * The core scenarios in every runner mode users run — a plain process, bubblewrap, Docker — through real hosts: an
 * answer, a follow-up, a host restart that resumes the provider session, the mock's usage in the ledger, a task that
 * fires, a file the user sends over HTTP and one a Telegram user sends (the Telegram fake); each provider (Claude
 * Code, Codex, OpenCode on a server without a key, the built-in runtime) answering from its fake model server, the
 * calls and tokens it reported in the ledger (one host per provider); the built-in runtime on a local model server
 * sending a file it wrote back to a Telegram user (the bytes the platform got), its calls in the ledger. One suite,
 * parametrised; the Docker mode shares one private daemon and one
 * image build. A mode this machine cannot run is skipped with the reason. The fault suite's short kills row with
 * Docker runners runs here too, on the same daemon and image (test/fault-suite.e2e.test.ts runs it with process,
 * bwrap and session-serve runners).
 */
const IMAGE = 'pincer-runner-modes';
let daemon: PrivateDockerd | undefined;

const dockerSkip = dockerdUnavailable();
const bwrapSkip = bwrapWorks() ? undefined : 'bubblewrap is not installed or cannot create its namespaces here';
const modes: Array<{ mode: string; skip: string | undefined; env: () => Record<string, string> }> = [
  { mode: 'process', skip: undefined, env: () => ({ PINCER_RUNNER: 'process' }) },
  { mode: 'bwrap', skip: bwrapSkip, env: () => ({ PINCER_RUNNER: 'bwrap' }) },
  { mode: 'docker', skip: dockerSkip, env: () => ({ PINCER_RUNNER: 'docker', PINCER_CONTAINER_IMAGE: IMAGE, DOCKER_HOST: daemon!.host }) },
];
for (const { mode, skip } of modes) if (skip) console.warn(`[runner-modes] skipping the ${mode} mode: ${skip}`);

beforeAll(async () => {
  if (dockerSkip) return;
  daemon = await startPrivateDockerd();
  await ensureRunnerImage({ image: IMAGE, cliEnv: daemon.cliEnv, appRoot: packageRoot(BUILT_CLI) });
}, 180_000);

afterAll(async () => {
  await daemon?.stop();
}, 60_000);

let telegram: FakeTelegram | undefined;
afterEach(async () => {
  const left = await stopAllHosts();
  await telegram?.close();
  telegram = undefined;
  await closeFakeOpenAIs();
  const claudeLeft = await cleanupClaude();
  expect(left).toEqual({ hosts: 0, runners: 0 });
  expect(claudeLeft).toBe(0);
  if (daemon) expect((await dockerCli(['ps', '-a', '--format', '{{.Names}}'], daemon.cliEnv)).trim()).toBe('');
});

async function post(host: HostHandle, conversation: string, body: Record<string, unknown>): Promise<{ sessionId: string; id: string }> {
  const res = await host.request('POST', `/v1/conversations/${conversation}/messages`, body);
  expect(res.status).toBe(202);
  return res.body as { sessionId: string; id: string };
}

function turnRows(host: HostHandle, sessionId: string): Array<{ input_tokens: number; output_tokens: number }> {
  const db = openSessionDb(path.join(host.sessionDir(sessionId), 'session.db'), { readonly: true });
  try {
    return turnUsageAfter(db, 0);
  } finally {
    db.close();
  }
}

function sessionState(host: HostHandle, sessionId: string): Record<string, string> {
  const db = openSessionDb(path.join(host.sessionDir(sessionId), 'session.db'), { readonly: true });
  try {
    const rows = db.prepare('SELECT key, value FROM session_state').all() as Array<{ key: string; value: string }>;
    return Object.fromEntries(rows.map((r) => [r.key, r.value]));
  } finally {
    db.close();
  }
}

describe.each(modes)('the core scenarios with $mode runners', { timeout: 180_000 }, ({ mode, skip, env }) => {
  it.skipIf(skip !== undefined)('answers, answers a follow-up in the same session, and resumes the provider session after a host restart', async () => {
    const host = await startHost(env());
    expect(host.stderr()).not.toContain('runners: '); // the kind is named, not chosen by `auto`
    const stream = host.stream('core');
    const first = await post(host, 'core', { text: 'first question' });
    await stream.waitFor('the answer', (e) => e.event === 'chat' && String(e.data.text).includes('first question'), 60_000);
    const second = await post(host, 'core', { text: 'a follow-up' });
    expect(second.sessionId).toBe(first.sessionId);
    await stream.waitFor('the follow-up answered', (e) => e.event === 'chat' && String(e.data.text).includes('a follow-up'), 60_000);
    const launched = { process: /runner started for/, bwrap: /started bwrap runner for/, docker: /started pincer-runner-\S+ \(image / }[mode];
    expect(host.stderr()).toMatch(launched!);
    const before = sessionState(host, first.sessionId);
    expect(before['mock:session_id']).toMatch(/^mock-/);
    // the usage the mock reported for both turns is in the host's ledger as the runner wrote it
    const ledger = await waitFor('both turns in the ledger', async () => {
      const total = (await host.request('GET', '/v1/usage')).body.total as { turns: number; inputTokens: number; outputTokens: number };
      return total.turns === 2 ? total : undefined;
    });
    const turns = turnRows(host, first.sessionId);
    expect(turns.map((t) => t.output_tokens > 0)).toEqual([true, true]);
    expect(ledger).toMatchObject({
      inputTokens: turns.reduce((n, t) => n + t.input_tokens, 0),
      outputTokens: turns.reduce((n, t) => n + t.output_tokens, 0),
    });
    stream.close();
    expect(await host.stop()).toBe(0);

    const again = await startHost(env(), host.home);
    const resumed = again.stream('core', { lastEventId: '0' });
    const third = await post(again, 'core', { text: 'after the restart' });
    expect(third.sessionId).toBe(first.sessionId);
    await resumed.waitFor('the answer after the restart', (e) => e.event === 'chat' && String(e.data.text).includes('after the restart'), 60_000);
    // the new runner resumed the stored provider session instead of starting a new one
    expect(sessionState(again, first.sessionId)['mock:session_id']).toBe(before['mock:session_id']);
    resumed.close();
    expect(await again.stop()).toBe(0);
  });

  it.skipIf(skip !== undefined)('fires a task, and a file the user sends over HTTP or Telegram reaches the agent in the session folder', async () => {
    telegram = await startFakeTelegram();
    const fake = telegram;
    const host = await startHost({ ...env(), TELEGRAM_BOT_TOKEN: fake.token, TELEGRAM_API_BASE_URL: fake.url, PINCER_ALLOWED_USERS: '' });
    await waitFor('telegram connected', () => host.stderr().includes('telegram: connected'), { timeoutMs: 20_000 });
    const stream = host.stream('work');
    const task = await host.request('POST', '/v1/conversations/work/tasks', {
      prompt: 'water the plants',
      processAfter: new Date(Date.now() - 1000).toISOString(),
    });
    expect(task.status).toBe(202);
    await stream.waitFor('the task ran', (e) => e.event === 'chat' && String(e.data.text).includes('water the plants'), 60_000);
    const sent = await post(host, 'work', {
      text: 'read this',
      attachments: [{ type: 'file', name: 'note.txt', data: Buffer.from('hello file\n').toString('base64') }],
    });
    const answer = await stream.waitFor('the file noted', (e) => e.event === 'chat' && String(e.data.text).includes('read this'), 60_000);
    const where = /\[file available at: (\S+\/downloads\/[^/\]]+\/note\.txt)\]/.exec(String(answer.data.text));
    expect(where, String(answer.data.text)).not.toBeNull();
    // the agent's path is inside its sandbox; the same file is in the session folder on the host
    const relative = where![1]!.slice(where![1]!.indexOf('/downloads/') + 1);
    expect(fs.readFileSync(path.join(host.sessionDir(sent.sessionId), relative), 'utf8')).toBe('hello file\n');
    await waitFor('the task completed', () => {
      const db = openSessionDb(path.join(host.sessionDir(sent.sessionId), 'session.db'), { readonly: true });
      try {
        return (db.prepare("SELECT status FROM messages_in WHERE kind = 'task'").get() as { status: string } | undefined)?.status === 'completed';
      } finally {
        db.close();
      }
    });
    // the same through a chat platform: a Telegram user's document is saved in the session, the agent told where
    const data = Buffer.from('a file from telegram\n');
    const toChat = (c: TelegramCall): boolean => Number(c.body.chat_id) === 701;
    fake.userSends({ chatId: 701, userId: 701, text: 'see attached', document: { name: 'notes.txt', data, mimeType: 'text/plain' } });
    const said = await fake.waitForSent('the telegram answer', (c) => toChat(c) && String(c.body.text ?? '').includes('see attached'), 60_000);
    const session = await sessionFor(host, 'telegram', 'telegram:701');
    const row = inboundOf(host, session.id).find((r) => r.kind === 'chat-sdk')!;
    const attachment = (JSON.parse(row.content) as { attachments: Array<{ localPath: string }> }).attachments[0]!;
    expect(fs.readFileSync(path.join(host.sessionDir(session.id), attachment.localPath))).toEqual(data);
    // the agent was told where, in its own path (its answer, echoing the prompt, was sent to the chat)
    const answered = JSON.parse(outboundOf(host, session.id)[0]!.content) as { text: string };
    expect(answered.text).toContain(`${attachment.localPath}]`);
    expect(said.method).toBe('sendMessage');
    stream.close();
    expect(await host.stop()).toBe(0);
  });

  it.skipIf(skip !== undefined)(
    'each provider answers from its fake model server, the usage it reported in the ledger',
    async () => {
      for (const { provider, start } of PROVIDER_CASES) {
        const fake = await start();
        const host = await startHost({ ...env(), ...fake.env });
        const stream = host.stream(provider);
        await post(host, provider, { text: `a question for ${provider}` });
        await stream.waitFor(`${provider}'s answer`, (e) => e.event === 'chat', 90_000);
        expect(fake.asked(), provider).toContain(`a question for ${provider}`);
        const total = await waitFor(`${provider}'s turn in the ledger`, async () => {
          const t = (await host.request('GET', '/v1/usage')).body.total as { turns: number; calls: number; outputTokens: number };
          return t.turns >= 1 ? t : undefined;
        });
        expect({ provider, calls: total.calls, outputTokens: total.outputTokens }).toEqual({ provider, ...fake.reported() });
        stream.close();
        expect(await host.stop(), provider).toBe(0);
      }
    },
    600_000,
  );

  it.skipIf(skip !== undefined)(
    'the built-in runtime on a local model server sends a file it wrote back to a Telegram user, its calls in the ledger',
    async () => {
      const model = await startFakeOpenAI();
      model.usage = { input: 300, cached: 0, output: 17 };
      const report = 'the report, written by the agent: r\u00e9sum\u00e9 \u2713\n';
      model.script(
        { call: 'write', args: { path: 'report.txt', content: report } },
        { call: 'mcp__pincer__send_file', args: { path: 'report.txt', text: 'your report' } },
        { text: 'sent it' },
      );
      telegram = await startFakeTelegram();
      const fake = telegram;
      const host = await startHost({
        ...env(),
        AGENT_PROVIDER: 'pincer',
        PINCER_MODEL: 'local/qwen3:8b',
        OPENAI_BASE_URL: model.baseUrl,
        PINCER_MODEL_MAX_RETRIES: '0',
        TELEGRAM_BOT_TOKEN: fake.token,
        TELEGRAM_API_BASE_URL: fake.url,
        PINCER_ALLOWED_USERS: '',
      });
      await waitFor('telegram connected', () => host.stderr().includes('telegram: connected'), { timeoutMs: 20_000 });
      const toChat = (c: TelegramCall): boolean => Number(c.body.chat_id) === 702;
      fake.userSends({ chatId: 702, userId: 702, text: 'write me a report' });
      const document = await fake.waitForSent('the report', (c) => toChat(c) && c.method === 'sendDocument', 90_000);
      // the bytes the platform got are the file the agent wrote in its own folder
      expect(document.body.document_data).toEqual(Buffer.from(report));
      const session = await sessionFor(host, 'telegram', 'telegram:702');
      expect(fs.readFileSync(path.join(host.sessionDir(session.id), 'agent', 'report.txt'), 'utf8')).toBe(report);
      await fake.waitForSent('the last answer', (c) => toChat(c) && c.body.text === 'sent it', 30_000);
      // the file's text first, then the file (Telegram's adapter sends a document's text apart), then the answer
      expect(
        fake
          .sent()
          .filter(toChat)
          .map((c) => [c.method, c.body.text ?? c.body.document_name]),
      ).toEqual([
        ['sendMessage', 'your report'],
        ['sendDocument', 'report.txt'],
        ['sendMessage', 'sent it'],
      ]);
      // every call to the model server is in the ledger, with the tokens the server reported
      expect(model.modelRequests().map((r) => r.userTexts.at(0))).toEqual(Array(3).fill(expect.stringContaining('write me a report')));
      // (a call's tokens are written when its answer has been read, a moment after the runner got it)
      const total = await waitFor('the turn and its calls in the ledger', async () => {
        const t = (await host.request('GET', '/v1/usage')).body.total as { turns: number; calls: number; inputTokens: number; outputTokens: number };
        return t.turns >= 1 && t.calls >= 3 && t.outputTokens >= 3 * 17 ? t : undefined;
      });
      expect(total).toMatchObject({ turns: 1, calls: 3, inputTokens: 3 * 300, outputTokens: 3 * 17 });
      // the placeholder that names the session to the proxy never reached the server
      expect(model.requests.map((r) => String(r.headers.authorization ?? ''))).not.toContainEqual(expect.stringContaining('pincer-placeholder-'));
      expect(await host.stop()).toBe(0);
    },
    180_000,
  );

  it.skipIf(skip !== undefined)("one trace per message holds the runner's spans (a sandbox exports through the host's relay)", async () => {
    await expectCompleteTrace(env());
  });
});

/** A message's one trace holds the host's spans and the runner's (a sandboxed runner's reach it through the relay). */
async function expectCompleteTrace(env: Record<string, string>): Promise<void> {
  const otlp = await startOtlpReceiver();
  try {
    const host = await startHost({ ...env, OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url });
    const stream = host.stream('traced');
    await post(host, 'traced', { text: 'trace me' });
    await stream.waitFor('the answer', (e) => e.event === 'chat', 60_000);
    const names = ['pincer.receive http', 'pincer.session.insert', 'pincer.pickup', 'invoke_agent mock', 'pincer.deliver'];
    const trace = await waitFor('a complete trace', () => [...otlp.traces().values()].find((spans) => names.every((n) => spans.some((s) => s.name === n))), {
      timeoutMs: 30_000,
    });
    expect(new Set(trace.map((s) => s.service))).toEqual(new Set(['pincer-host', 'pincer-runner']));
    expect(otlp.traces().size).toBe(1);
    stream.close();
    expect(await host.stop()).toBe(0);
  } finally {
    await otlp.close();
  }
}

describe('a session served by its own `pincer session-serve` process', () => {
  it.skipIf(bwrapSkip !== undefined)(
    "with bwrap runners: one trace per message holds the runner's spans (the serve process passes on the host's relay)",
    async () => {
      await expectCompleteTrace({ PINCER_RUNNER: 'session-serve', PINCER_SESSION_SERVE_RUNNER: 'bwrap' });
    },
    180_000,
  );
});

describe.skipIf(dockerSkip !== undefined)('the fault suite with docker runners (short)', () => {
  it('loses and duplicates nothing while containers, their docker CLIs and the host are SIGKILLed; never two runners', async () => {
    const row = await killsScenario(60, 1, 'docker', { DOCKER_HOST: daemon!.host, PINCER_CONTAINER_IMAGE: IMAGE });
    process.stdout.write(`${row.scenario}: sent ${row.sent}, lost ${row.lost}, duplicated ${row.duplicated}, most runners ${row.mostRunners}\n`);
    expect(row.sent).toBeGreaterThan(0);
    expect(row.scenario).not.toMatch(/\(0 runner/); // some container or CLI was really killed
    expect({ lost: row.lost, duplicated: row.duplicated, mostRunners: row.mostRunners, note: row.note, recovered: row.recoveryMs !== null }).toEqual({
      lost: 0,
      duplicated: 0,
      mostRunners: 1,
      note: undefined,
      recovered: true,
    });
  }, 600_000);
});
