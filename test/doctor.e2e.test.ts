import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createSessionFolder } from '../src/db/layout.js';
import { CentralStore, openCentralDb } from '../src/host/central-db/store.js';
import { BUILT_CLI } from './support/runner-harness.js';

const homes: string[] = [];

afterEach(() => {
  for (const home of homes.splice(0)) fs.rmSync(home, { recursive: true, force: true });
});

function makeHome(): string {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-doctor-'));
  homes.push(home);
  return home;
}

function doctor(args: string[], env: Record<string, string> = {}) {
  const result = spawnSync(process.execPath, [BUILT_CLI, 'doctor', ...args], {
    // No Claude login either: a config dir of its own.
    env: { PATH: process.env.PATH, HOME: process.env.HOME, CLAUDE_CONFIG_DIR: path.join(os.tmpdir(), 'pincer-no-claude-login'), ...env },
    encoding: 'utf8',
    timeout: 20_000,
  });
  return { code: result.status, out: result.stdout, err: result.stderr };
}

describe('pincer doctor', () => {
  it('shows the provider each session would run and why, and its resources', () => {
    const home = makeHome();
    const ok = createSessionFolder(path.join(home, 'sessions', 'ok'));
    fs.writeFileSync(ok.config, JSON.stringify({ provider: 'echo' }));
    fs.mkdirSync(path.join(ok.agent, 'prompts'));
    fs.writeFileSync(path.join(ok.agent, 'prompts', 'review.md'), 'Review $ARGUMENTS');
    const group = createSessionFolder(path.join(home, 'sessions', 'group'));
    fs.writeFileSync(group.config, JSON.stringify({ groupProvider: 'MOCK' }));

    const { code, out } = doctor(['--home', home]);
    expect(out).toMatch(/^ {2}mock +ok \(auto picks it only in pincer chat, when nothing else is usable\)$/m);
    expect(out).toContain(
      `session ok (${ok.root})\n  provider: mock — session policy "echo"\n  resources: 0 skills from none, 1 prompt (/review) from convention\n`,
    );
    expect(out).toContain(`session group (${group.root})\n  provider: mock — group policy "MOCK"\n`);
    expect(out).toMatch(/all sessions can start\n$/);
    expect(code).toBe(0);
  });

  it('says how runners would start, and warns when agents would run unsandboxed', () => {
    const home = makeHome();
    const plain = doctor(['--home', home], { PINCER_RUNNER: 'process' });
    expect(plain.out).toContain('runners: process (PINCER_RUNNER)\nwarning: agents run unsandboxed: install bubblewrap or Docker\n');
    const auto = doctor(['--home', home], { PATH: '/nonexistent', DOCKER_HOST: 'unix:///nonexistent.sock' });
    expect(auto.out).toContain('runners: process (auto: agents run unsandboxed: install bubblewrap or Docker)\nwarning: agents run unsandboxed');
  });

  it('shows how many runners the host keeps alive at once and the inotify limits; a bad cap exits 1', () => {
    const home = makeHome();
    fs.writeFileSync(createSessionFolder(path.join(home, 'sessions', 'ok')).config, JSON.stringify({ provider: 'mock' }));
    const capped = doctor(['--home', home], { PINCER_MAX_RUNNERS: '3' });
    expect(capped.out).toContain('runners alive at once: at most 3 (PINCER_MAX_RUNNERS)\n');
    expect(capped.code).toBe(0);
    const instances = fs.readFileSync('/proc/sys/fs/inotify/max_user_instances', 'utf8').trim();
    const watches = fs.readFileSync('/proc/sys/fs/inotify/max_user_watches', 'utf8').trim();
    expect(capped.out).toMatch(
      new RegExp(`^inotify: \\d+ of ${instances} instances per user in use \\(fs.inotify.max_user_instances\\), ${watches} watches`, 'm'),
    );
    const auto = doctor(['--home', home]);
    const totalMib = Math.floor(os.totalmem() / 2 ** 20);
    expect(auto.out).toContain(`runners alive at once: ${Math.floor(totalMib / 2)} MiB (half of ${totalMib} MiB) shared at each provider's footprint`);
    const bad = doctor(['--home', home], { PINCER_MAX_RUNNERS: 'many' });
    expect(bad.out).toContain('✗ runners alive at once: bad environment: PINCER_MAX_RUNNERS:');
    expect(bad.code).toBe(1);
  });

  it.each([
    { case: 'an unknown provider', config: { provider: 'claud' }, line: '✗ provider: unknown provider "claud" (known: claude, codex, opencode, mock' },
    {
      case: 'a provider without credentials',
      config: { groupProvider: 'claude-code' },
      line: '✗ provider: provider "claude" (group policy "claude-code") has no credentials: set ANTHROPIC_API_KEY',
    },
    { case: 'an invalid config.json', config: { provder: 'mock' }, line: '✗ config: invalid' },
  ])('flags $case and exits 1', ({ config, line }) => {
    const home = makeHome();
    const s = createSessionFolder(path.join(home, 'sessions', 's'));
    fs.writeFileSync(s.config, JSON.stringify(config));
    const { code, out } = doctor(['--home', home]);
    expect(out).toContain(line);
    expect(out).toMatch(/1 session cannot start\n$/);
    expect(code).toBe(1);
  });

  it('lists resource problems of a session given with --workspace', () => {
    const home = makeHome();
    const s = createSessionFolder(path.join(home, 'x'));
    fs.writeFileSync(path.join(s.agent, 'package.json'), JSON.stringify({ pincer: { skills: ['skills/*/SKILL.md'] } }));
    const { code, out } = doctor(['--workspace', s.root], { AGENT_PROVIDER: 'mock' });
    expect(out).toContain('  ! skills: "skills/*/SKILL.md" matched nothing\n');
    expect(code).toBe(0);
  });
});

describe('pincer doctor with a host home', () => {
  it('shows each agent group of the central DB with its provider, resources and sessions', () => {
    const home = makeHome();
    const store = new CentralStore(openCentralDb(path.join(home, 'pincer.db')));
    const ok = store.createAgentGroup({ name: 'main', folder: 'main', provider: 'mock', timezone: 'UTC' });
    store.createAgentGroup({ name: 'coder', folder: 'coder', provider: 'claude-code', timezone: 'UTC' });
    const session = createSessionFolder(path.join(home, 'sessions', 's-1'));
    store.insertSession({ id: 's-1', agentGroupId: ok.id, channelType: 'terminal', platformId: 'local', threadKey: '', folder: session.root });
    store.db.close();
    fs.mkdirSync(path.join(home, 'groups', 'main', 'prompts'), { recursive: true });
    fs.writeFileSync(path.join(home, 'groups', 'main', 'prompts', 'standup.md'), 'Summarise $ARGUMENTS');

    // The shell's AGENT_PROVIDER does not apply to groups: the host sets it per group.
    const { code, out } = doctor(['--home', home], { AGENT_PROVIDER: 'claud' });
    // each group's selection is its model-runtime generation's (built now: no host runs on the home)
    expect(out).toContain(`agent group main (${ok.id}, ${path.join(home, 'groups', 'main')})\n  model runtime: generation 1, built `);
    expect(out).toContain(
      `; credentials: none\n  provider: mock — session policy "mock"\n` +
        `  resources: 0 skills from none, 1 prompt (/standup) from convention\n  sessions: s-1\n`,
    );
    expect(out).toMatch(
      /agent group coder \(.*\)\n {2}model runtime: .*\n {2}✗ provider: provider "claude" \(session policy "claude-code"\) has no credentials/,
    );
    expect(out).toMatch(/1 agent group and 1 session cannot start\n$/);
    expect(code).toBe(1);
  });

  it('counts a pincer chat session that ran on the mock as working', () => {
    const home = makeHome();
    const env = { PATH: process.env.PATH!, HOME: home, PINCER_HOME: home, CLAUDE_CONFIG_DIR: path.join(home, 'no-claude-login'), PINCER_RUNNER: 'process' };
    const chat = spawnSync(process.execPath, [BUILT_CLI, 'chat'], { env, input: 'hello\n', encoding: 'utf8', timeout: 120_000 });
    expect(chat.status).toBe(0);
    expect(chat.stdout).toContain('agent> echo: ');
    const { code, out } = doctor([], { HOME: home, PINCER_HOME: home });
    expect(out).toMatch(/^home .*\n/);
    expect(out).toContain(
      `session chat (${path.join(home, 'sessions', 'chat')})\n  provider: mock — auto (session policy "auto"): no provider is usable, falling back to mock (a pincer chat session)\n`,
    );
    // pincer host would still need a key for a new conversation: said, not counted as a failure of this home
    expect(out).toMatch(/agent group main \(.*\)\n {2}model runtime: .*\n {2}! pincer host could not start its agent: auto/);
    expect(out).toMatch(/all agent groups and sessions can start\n$/);
    expect(code).toBe(0);
  }, 150_000);

  it('works with no home yet: says what the first chat or host creates, and creates nothing', () => {
    const parent = makeHome();
    const home = path.join(parent, 'not-yet');
    const { code, out, err } = doctor(['--home', home]);
    expect(err).toBe('');
    expect(out.split('\n')[0]).toBe(
      `home ${home} does not exist yet: the first pincer chat or pincer host creates it (pincer.db, sessions/, groups/main/, logs/) and the agent group main with the provider below`,
    );
    expect(out).toContain('pincer chat would run: mock — auto');
    expect(out).toContain('providers in this environment:');
    expect(code).toBe(0);
    expect(fs.existsSync(home)).toBe(false);
  });

  it('names OPENAI_BASE_URL when no model server answers there', async () => {
    const port = await closedPort();
    const { code, out } = doctor(['--home', makeHome()], { PINCER_MODEL: 'local/qwen3:8b', OPENAI_BASE_URL: `http://127.0.0.1:${port}/v1` });
    expect(out).toContain(
      `✗ model server: OPENAI_BASE_URL http://127.0.0.1:${port}/v1: no model server answers there (ECONNREFUSED); start it or fix OPENAI_BASE_URL\n`,
    );
    expect(code).toBe(1);
  });
});

/** A loopback port nothing listens on (bound, then closed). */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}
