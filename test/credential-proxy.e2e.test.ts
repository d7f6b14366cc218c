import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { claudeTestEnv, cleanupClaude, fakeAnthropic } from './support/claude.js';
import { onPath } from './support/dockerd.js';
import { closeFakeOpenAIs, startFakeOpenAI } from './support/fake-openai.js';
import { startHost, stopAllHosts, TEST_TOKEN, type HostHandle } from './support/host-harness.js';
import { descendants, environOf } from './support/processes.js';
import { startRunner, stopAllRunners } from './support/runner-harness.js';
import { cleanupSessions, createTestSession } from './support/session.js';
import { waitFor } from './support/wait.js';

/**
 * The credential proxy, end to end: a real `pincer host` holding a real key, a real provider SDK and CLI in a process
 * or bubblewrap runner, and the scripted fake model server. The model has the agent run `env; cat /proc/*\/environ`
 * through its own shell tool. The fake server must receive the real key; the key must appear in no environment of any
 * process under the host, no file of the session or group folder, and not in the tool's output the model gets back.
 */
const MODES = onPath('bwrap') ? (['process', 'bwrap'] as const) : (['process'] as const);
if (MODES.length === 1) console.warn('[trust] bubblewrap is not installed: the proxy runs with process runners only');

const SLOW = { timeoutMs: 60_000 };
/** The shell probe: proves it ran (42 is computed, so the command text alone cannot match) and lists every env. */
const PROBE = `echo PROBE-$((6*7)); env; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n' | grep -i -e key -e token -e content | sort -u | cut -c1-400`;

afterEach(async () => {
  expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
  expect(await stopAllRunners()).toBe(0);
  cleanupSessions();
  await closeFakeOpenAIs();
  expect(await cleanupClaude()).toBe(0);
});

/** Regular files under `dir` (never through a link) that contain `needle`. */
function filesContaining(dir: string, needle: string): string[] {
  const found: string[] = [];
  const walk = (d: string): void => {
    for (const entry of fs.readdirSync(d, { withFileTypes: true })) {
      const full = path.join(d, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.isFile()) {
        try {
          if (fs.readFileSync(full).includes(needle)) found.push(full);
        } catch {
          // vanished (a temp file)
        }
      }
    }
  };
  walk(dir);
  return found;
}

interface ProviderCase {
  env(realKey: string): Promise<{ env: Record<string, string>; receivedKeys(): string[]; toolOutputs(): string }>;
}

const PROVIDERS: Record<'claude' | 'codex' | 'opencode', ProviderCase> = {
  claude: {
    async env(realKey) {
      const fake = await fakeAnthropic();
      fake.script(
        { toolUse: { name: 'Bash', input: { command: PROBE, description: 'look around' } } },
        { toolUse: { name: 'mcp__pincer__send_file', input: { path: '../group/notes.md', text: 'the notes' } } },
        { text: 'done' },
      );
      const base = claudeTestEnv(fake, { ANTHROPIC_API_KEY: realKey });
      return {
        env: base,
        receivedKeys: () => fake.modelRequests().map((r) => String(r.headers['x-api-key'])),
        toolOutputs: () =>
          fake
            .modelRequests()
            .slice(1)
            .map((r) => r.lastUserText)
            .join('\n'),
      };
    },
  },
  codex: {
    async env(realKey) {
      const fake = await startFakeOpenAI();
      fake.script({ call: 'exec_command', args: { cmd: PROBE } }, { text: 'done' });
      return {
        env: {
          AGENT_PROVIDER: 'codex',
          OPENAI_BASE_URL: fake.baseUrl,
          OPENAI_API_KEY: realKey,
          CODEX_MODEL: fake.model,
          CODEX_MAX_RETRIES: '0',
          // Codex's own sandbox off: the probe must see all it can
          CODEX_SANDBOX_MODE: 'danger-full-access',
        },
        receivedKeys: () => fake.modelRequests().map((r) => String(r.headers.authorization)),
        toolOutputs: () =>
          fake
            .modelRequests()
            .slice(1)
            .map((r) => JSON.stringify([(r.body.tools as { name?: string }[] | undefined)?.map((t) => t.name), (r.body.input as unknown[]).slice(-2)]))
            .join('\n'),
      };
    },
  },
  opencode: {
    async env(realKey) {
      const fake = await startFakeOpenAI();
      fake.script({ call: 'bash', args: { command: PROBE, description: 'look around' } }, { text: 'done' });
      return {
        env: { AGENT_PROVIDER: 'opencode', OPENCODE_BASE_URL: fake.baseUrl, OPENAI_API_KEY: realKey, OPENCODE_MODEL: fake.model },
        receivedKeys: () => fake.requests.map((r) => String(r.headers.authorization)),
        toolOutputs: () =>
          fake
            .modelRequests()
            .slice(1)
            .map((r) => JSON.stringify(r.body))
            .join('\n'),
      };
    },
  },
};

function proxyPort(host: HostHandle): number {
  const m = /credential proxy on 127\.0\.0\.1:(\d+)/.exec(host.stderr());
  if (!m) throw new Error(`no credential proxy in the host log:\n${host.stderr()}`);
  return Number(m[1]);
}

describe('the credential proxy: agents never hold a real key', { timeout: 180_000 }, () => {
  const cases = MODES.flatMap((mode) => (['claude', 'codex', 'opencode'] as const).map((provider) => [provider, mode] as const));

  it.each(cases)('%s in a %s runner', async (provider, mode) => {
    const realKey = `sk-real-${randomBytes(12).toString('hex')}`;
    const setup = await PROVIDERS[provider].env(realKey);
    const host = await startHost({ ...setup.env, PINCER_RUNNER: mode, PINCER_IDLE_TIMEOUT_MS: '3000', PINCER_PROVIDER_TIMEOUT_MS: '60000' });
    await waitFor('the host to blank its own copy of the key', () => !environOf(host.child.pid!).includes(realKey));
    fs.mkdirSync(path.join(host.home, 'groups', 'main'), { recursive: true });
    fs.writeFileSync(path.join(host.home, 'groups', 'main', 'notes.md'), 'group notes');
    const stream = host.stream('c');
    const res = await host.request('POST', '/v1/conversations/c/messages', { text: 'look around please' });
    expect(res.status).toBe(202);
    const sessionId = (res.body as { sessionId: string }).sessionId;

    // While the runner and its SDK child live: nothing under the host holds the key; they hold a placeholder.
    let placeholder = '';
    await waitFor(
      'the runner tree',
      () => {
        const tree = descendants(host.child.pid!);
        const envs = tree.map(environOf).join('\n');
        placeholder = /(?:ANTHROPIC|OPENAI)_API_KEY=(pincer-placeholder-[A-Za-z0-9_-]+)/.exec(envs)?.[1] ?? '';
        return tree.length >= 2 && placeholder !== '' && !envs.includes(realKey);
      },
      SLOW,
    );
    await stream.waitFor('the final answer', (e) => e.event === 'chat' && e.data.text === 'done', 90_000);
    for (const pid of descendants(host.child.pid!)) expect([pid, environOf(pid).includes(realKey)]).toEqual([pid, false]);

    // The fake server got the real key on every request, the agent's shell saw none of it.
    expect(setup.receivedKeys().length).toBeGreaterThan(0);
    for (const key of setup.receivedKeys()) expect(key).toMatch(new RegExp(`^(Bearer )?${realKey}$`));
    const output = setup.toolOutputs();
    if (!output.includes('PROBE-42')) throw new Error(`the probe did not run; the model got back:\n${output.slice(0, 3000)}`);
    expect(output).not.toContain(realKey);
    expect(filesContaining(host.sessionDir(sessionId), realKey)).toEqual([]);
    expect(filesContaining(path.join(host.home, 'groups'), realKey)).toEqual([]);

    if (provider === 'claude') {
      // send_file of the group's notes.md, read through the group folder's link (process) or read-only mount (bwrap)
      const sent = await stream.waitFor('the file', (e) => e.event === 'chat' && e.data.text === 'the notes');
      expect(sent.data.files).toEqual(['notes.md']);
      const [url] = sent.data.fileUrls as string[];
      const download = await fetch(`http://127.0.0.1:${host.port}${url}`, { headers: { Authorization: `Bearer ${TEST_TOKEN}` } });
      expect(await download.text()).toBe('group notes');
    }

    // Once the runner stops (idle), its placeholder is worthless.
    await waitFor('the idle runner stopped', () => /runner \S+ for \S+ stopped/.test(host.stderr()), SLOW);
    const revoked = await fetch(`http://127.0.0.1:${proxyPort(host)}/${provider === 'claude' ? 'anthropic/v1/messages' : 'openai/responses'}`, {
      method: 'POST',
      headers: { 'x-api-key': placeholder, authorization: `Bearer ${placeholder}`, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(revoked.status).toBe(401);
    expect(await revoked.text()).toMatch(/unknown or revoked placeholder/);
    stream.close();
    expect(await host.stop()).toBe(0);
  });
});

describe('without the proxy (a runner started by hand with a key)', { timeout: 120_000 }, () => {
  it("Codex's shell tool still gets no key variable", async () => {
    const realKey = `sk-real-${randomBytes(12).toString('hex')}`;
    const fake = await startFakeOpenAI();
    fake.script({ call: 'exec_command', args: { cmd: 'echo PROBE-$((6*7)); env' } }, { text: 'done' });
    const session = createTestSession('pincer-codex-env-');
    const runner = startRunner(session.paths.root, {
      AGENT_PROVIDER: 'codex',
      OPENAI_BASE_URL: fake.baseUrl,
      OPENAI_API_KEY: realKey,
      CODEX_MODEL: fake.model,
      CODEX_MAX_RETRIES: '0',
      CODEX_SANDBOX_MODE: 'danger-full-access',
    });
    await runner.ready();
    session.chat('look around');
    await waitFor('the answer', () => session.outboundContents().some((c) => c.text === 'done'), SLOW);
    expect(fake.modelRequests()[0]!.headers.authorization).toBe(`Bearer ${realKey}`); // unprotected: the runner holds it
    const output = JSON.stringify(fake.modelRequests()[1]!.body.input);
    expect(output).toContain('PROBE-42');
    expect(output).toContain('PATH=');
    expect(output).not.toContain(realKey);
    expect(output).not.toContain('OPENAI_API_KEY');
    expect(await runner.stop()).toBe(0);
  });
});
