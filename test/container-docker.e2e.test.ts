import { spawn } from 'node:child_process';
import net from 'node:net';
import os from 'node:os';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DockerLauncher, ensureRunnerImage, isContainerError, listRunnerContainers } from '../src/container/index.js';
import { packageRoot } from '../src/container/config.js';
import type { DockerSettings } from '../src/container/types.js';
import { readRunnerState } from '../src/db/state.js';
import { dockerCli, dockerdUnavailable, startPrivateDockerd, type PrivateDockerd } from './support/dockerd.js';
import { killAllLaunched, launchTracked } from './support/launched-runners.js';
import { BUILT_CLI } from './support/runner-harness.js';
import { cleanupSessions, createTestSession, type TestSession } from './support/session.js';
import { waitFor } from './support/wait.js';

/**
 * Runners in real containers on a private dockerd (started here, stopped at the end): the mock provider answers
 * through the bind-mounted session DB, stop and kill leave no container, the sandbox has no network and none of the
 * host's secrets.
 */
const skip = dockerdUnavailable();
if (skip) console.warn(`[container] skipping Docker tests: ${skip}`);

const IMAGE = 'pincer-runner-test';
const FAULT_RUNS = Number(process.env.PINCER_CONTAINER_FAULT_RUNS ?? 8);
const HOST_SCRIPT = fileURLToPath(new URL('./support/launcher-host.mjs', import.meta.url));
let daemon: PrivateDockerd;
let settings: DockerSettings;

describe.skipIf(skip !== undefined)('runners in Docker containers', () => {
  beforeAll(async () => {
    daemon = await startPrivateDockerd();
    const appRoot = packageRoot(BUILT_CLI);
    await ensureRunnerImage({ image: IMAGE, cliEnv: daemon.cliEnv, appRoot });
    settings = {
      image: IMAGE,
      appRoot,
      cliEnv: daemon.cliEnv,
      extraEnv: [],
      memory: '512m',
      cpus: '1',
      pids: 256,
      network: 'none',
    };
  }, 120_000);

  afterEach(async () => {
    expect(await killAllLaunched()).toBe(0);
    expect(await listRunnerContainers(daemon.cliEnv)).toEqual([]);
    cleanupSessions();
  });

  afterAll(async () => {
    await daemon?.stop();
    expect(daemon.process.exitCode ?? daemon.process.signalCode).not.toBeNull();
    expect(fs.existsSync(daemon.dir)).toBe(false);
  }, 60_000);

  const launcher = (): DockerLauncher => new DockerLauncher(settings, BUILT_CLI);
  // the idle fallback poll is a minute: a reply within the test's deadlines proves the inotify wake crossed the mount.
  const env = { AGENT_PROVIDER: 'mock', TZ: 'UTC', PINCER_POLL_IDLE_MS: '60000' };

  async function replyTo(s: TestSession, text: string): Promise<{ latencyMs: number; text: string }> {
    const { id } = s.chat(text);
    const row = await waitFor(`reply to ${text}`, () => s.outbound().find((r) => r.in_reply_to === id));
    return { latencyMs: Date.parse(row.timestamp) - Date.parse(s.inbound(id).timestamp), text: String(JSON.parse(row.content).text) };
  }

  it('answers messages through the bind-mounted session DB, woken by inotify, and stops cleanly on SIGTERM', async () => {
    const s = createTestSession();
    const started = performance.now();
    const runner = launchTracked(launcher(), { workspace: s.paths.root, env, name: 'e2e-1' });
    await runner.ready();
    const startToReadyMs = performance.now() - started;
    const first = await replyTo(s, 'hello from the host');
    expect(first.text).toMatch(/^echo: <context timezone="UTC"\/>\n<messages>\n<message id="1" sender="alice"[^>]*>hello from the host<\/message>/);
    const latencies: number[] = [];
    for (let i = 0; i < 20; i++) latencies.push((await replyTo(s, `m${i}`)).latencyMs);
    latencies.sort((a, b) => a - b);
    console.log(
      `[container] docker: start → ready ${Math.round(startToReadyMs)} ms; insert → reply p50 ${latencies[10]} ms, max ${latencies.at(-1)} ms (20 messages, bind mount)`,
    );
    expect(readRunnerState(s.db)?.provider).toBe('mock');
    expect(runner.handle.containerName).toBe('pincer-runner-e2e-1');
    expect(await runner.handle.stop()).toBe(0);
    expect(runner.stderr()).toContain('[runner] stopped');
    expect(await listRunnerContainers(daemon.cliEnv)).toEqual([]);
  });

  it('runs as the owner of the session folder, with a read-only root and a writable /tmp', async () => {
    const s = createTestSession();
    // a non-root owner: the runner must still write session.db and its WAL files through the mount.
    fs.chownSync(s.paths.root, 4242, 4242);
    for (const name of fs.readdirSync(s.paths.root)) fs.chownSync(path.join(s.paths.root, name), 4242, 4242);
    const runner = launchTracked(launcher(), { workspace: s.paths.root, env, name: 'owner' });
    await runner.ready();
    expect((await replyTo(s, 'as 4242')).text).toContain('as 4242');
    const probe = await exec(runner.handle.containerName!, [
      'const fs = require("fs"); const os = require("os"); const out = {uid: process.getuid(), gid: process.getgid(), name: os.userInfo().username};',
      'try { fs.writeFileSync("/usr/x", "x"); out.root = "writable"; } catch (e) { out.root = e.code; }',
      'fs.writeFileSync("/tmp/x", "x"); out.tmp = "writable";',
      'console.log(JSON.stringify(out));',
    ]);
    expect(JSON.parse(probe)).toEqual({ uid: 4242, gid: 4242, name: 'pincer', root: 'EROFS', tmp: 'writable' });
    expect(await runner.handle.stop()).toBe(0);
  });

  it('reads config.json, a read-only group/CLAUDE.md and a read-only global/CLAUDE.md from separate host folders through the mounts', async () => {
    const s = createTestSession();
    const agentDir = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-group-'));
    const globalDir = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-global-'));
    try {
      fs.writeFileSync(path.join(agentDir, 'CLAUDE.md'), 'You are the group agent.');
      fs.writeFileSync(path.join(globalDir, 'CLAUDE.md'), 'Shared rules for all.');
      fs.writeFileSync(path.join(s.paths.root, 'config.json'), JSON.stringify({ timezone: 'Asia/Tokyo', assistantName: 'Pinchy' }));
      const { TZ: _tz, ...noTz } = env;
      const runner = launchTracked(launcher(), {
        workspace: s.paths.root,
        groupDir: agentDir,
        globalDir,
        env: { ...noTz, MOCK_RECORD_FILE: '/workspace/mock-record.jsonl' },
        name: 'mounts',
      });
      await runner.ready();
      expect((await replyTo(s, 'what zone?')).text).toMatch(/^echo: <context timezone="Asia\/Tokyo"\/>/);
      const record = JSON.parse(fs.readFileSync(path.join(s.paths.root, 'mock-record.jsonl'), 'utf8').split('\n')[0]!) as { systemPrompt?: string };
      expect(record.systemPrompt).toContain('Shared rules for all.\n\nYou are the group agent.');
      const probe = await exec(runner.handle.containerName!, [
        'const fs = require("fs"); const out = {};',
        'try { fs.writeFileSync("/workspace/global/x", "x"); out.global = "writable"; } catch (e) { out.global = e.code; }',
        'try { fs.writeFileSync("/workspace/group/CLAUDE.md", "x"); out.group = "writable"; } catch (e) { out.group = e.code; }',
        'fs.writeFileSync("/workspace/agent/notes.md", "x"); out.agent = "writable";',
        'console.log(JSON.stringify(out));',
      ]);
      expect(JSON.parse(probe)).toEqual({ global: 'EROFS', group: 'EROFS', agent: 'writable' });
      expect(fs.readFileSync(path.join(agentDir, 'CLAUDE.md'), 'utf8')).toBe('You are the group agent.');
      expect(fs.existsSync(path.join(s.paths.agent, 'notes.md'))).toBe(true);
      expect(await runner.handle.stop()).toBe(0);
    } finally {
      fs.rmSync(agentDir, { recursive: true, force: true });
      fs.rmSync(globalDir, { recursive: true, force: true });
    }
  });

  it('holds the runner to PINCER_CONTAINER_FILE_SIZE and writes no core files: what it starts inherits them', async () => {
    const s = createTestSession();
    const limited = new DockerLauncher({ ...settings, fileSizeBytes: 8 << 20 }, BUILT_CLI);
    const runner = launchTracked(limited, { workspace: s.paths.root, env, name: 'fsize' });
    await runner.ready();
    const pid = readRunnerState(s.db)!.pid;
    const probe = await exec(runner.handle.containerName!, [
      'const fs = require("fs");',
      `const limits = fs.readFileSync("/proc/${pid}/limits", "utf8").split("\\n");`,
      'const row = (name) => limits.find((l) => l.startsWith(name)).split(/\\s{2,}/).slice(1, 3);',
      'console.log(JSON.stringify({ fsize: row("Max file size"), core: row("Max core file size") }));',
    ]);
    expect(JSON.parse(probe)).toEqual({ fsize: [String(8 << 20), String(8 << 20)], core: ['0', '0'] });
    expect(await runner.handle.stop()).toBe(0);
  });

  it('has no network and none of the host secrets; values never appear on the docker command line', async () => {
    const s = createTestSession();
    const server = net.createServer((socket) => socket.end('reached'));
    await new Promise<void>((resolve) => server.listen(0, '0.0.0.0', resolve));
    const port = (server.address() as net.AddressInfo).port;
    const hostAddress = Object.values(os.networkInterfaces())
      .flat()
      .find((i) => i && i.family === 'IPv4' && !i.internal)?.address;
    try {
      const runner = launchTracked(launcher(), {
        workspace: s.paths.root,
        env: {
          ...env,
          MOCK_DELAY_MS: '0',
          PINCER_HTTP_TOKEN: 'http-secret',
          HOST_DB_PASSWORD: 'db-secret',
          ANTHROPIC_API_KEY: 'sk-not-for-mock',
          PINCER_LOG_LEVEL: 'info',
        },
        name: 'sealed',
      });
      await runner.ready();
      const pid = readRunnerState(s.db)!.pid;
      const probe = await exec(runner.handle.containerName!, [
        `const env = require("fs").readFileSync("/proc/${pid}/environ", "utf8").split("\\0").filter(Boolean).map((e) => e.split("=")[0]).sort();`,
        'const interfaces = Object.keys(require("os").networkInterfaces()).sort();',
        `const target = ${JSON.stringify(hostAddress ?? '192.0.2.1')};`,
        `const sock = require("net").connect({ host: target, port: ${port}, timeout: 3000 });`,
        'const done = (net) => { console.log(JSON.stringify({ env, interfaces, net })); process.exit(0); };',
        'sock.on("data", () => done("reached")); sock.on("error", (e) => done(e.code)); sock.on("timeout", () => done("timeout"));',
      ]);
      const seen = JSON.parse(probe) as { env: string[]; interfaces: string[]; net: string };
      // exactly the runner's own settings, plus what docker and the image set (HOSTNAME, PATH, HOME, the fingerprint).
      expect(seen.env).toEqual([
        'AGENT_PROVIDER',
        'HOME',
        'HOSTNAME',
        'MOCK_DELAY_MS',
        'PATH',
        'PINCER_IMAGE_FINGERPRINT',
        'PINCER_LOG_LEVEL',
        'PINCER_POLL_IDLE_MS',
        'PINCER_SANDBOX_NO_NETWORK',
        'PINCER_STOP_ON_STDIN_EOF',
        'PINCER_WORKSPACE',
        'TZ',
      ]);
      for (const name of ['AGENT_PROVIDER', 'TZ', 'MOCK_DELAY_MS', 'PINCER_LOG_LEVEL', 'PINCER_POLL_IDLE_MS', 'PINCER_WORKSPACE'])
        expect(seen.env).toContain(name);
      for (const name of ['PINCER_HTTP_TOKEN', 'HOST_DB_PASSWORD', 'ANTHROPIC_API_KEY', 'DOCKER_HOST']) expect(seen.env).not.toContain(name);
      expect(seen.interfaces).toEqual(['lo']);
      expect(seen.net).not.toBe('reached');
      expect(runner.handle.child.spawnargs.join(' ')).not.toMatch(/http-secret|db-secret|sk-not-for-mock/);
      const hostConfig = JSON.parse(await dockerCli(['inspect', '--format', '{{json .HostConfig}}', runner.handle.containerName!], daemon.cliEnv)) as Record<
        string,
        unknown
      >;
      expect(hostConfig).toMatchObject({
        NetworkMode: 'none',
        ReadonlyRootfs: true,
        CapDrop: ['ALL'],
        SecurityOpt: ['no-new-privileges'],
        PidsLimit: 256,
        Memory: 512 * 1024 * 1024,
        NanoCpus: 1e9,
        Init: true,
        AutoRemove: true,
      });
      expect(await runner.handle.stop()).toBe(0);
    } finally {
      server.close();
    }
  });

  it.each([
    ['kill()', (r: { handle: { kill(): Promise<unknown> } }) => r.handle.kill()],
    ['docker kill from outside', (r: { handle: { containerName: string | undefined } }) => dockerCli(['kill', r.handle.containerName!], daemon.cliEnv)],
    ['SIGKILL of the docker CLI', (r: { handle: { child: { kill(s: NodeJS.Signals): boolean } } }) => r.handle.child.kill('SIGKILL')],
  ])('%s mid-query loses no message and leaves no container', async (_how, killIt) => {
    const s = createTestSession();
    const runner = launchTracked(launcher(), { workspace: s.paths.root, env: { ...env, MOCK_DELAY_MS: '60000' }, name: 'killed' });
    await runner.ready();
    const { id } = s.chat('survive this');
    await waitFor('processing', () => s.inbound(id).status === 'processing');
    await killIt(runner as never);
    const code = await runner.handle.exited;
    expect(code).not.toBe(0);
    expect(await listRunnerContainers(daemon.cliEnv)).toEqual([]);
    // the row is still there, in flight, never completed and never dropped; the host's sweep would make it pending.
    expect(s.inbound(id)).toMatchObject({ status: 'processing', tries: 1 });
    expect(s.outbound()).toEqual([]);
    s.db.prepare("UPDATE messages_in SET status = 'pending' WHERE id = ?").run(id);
    const again = launchTracked(launcher(), { workspace: s.paths.root, env, name: 'killed' });
    await waitFor('completed after restart', () => s.inbound(id).status === 'completed', { timeoutMs: 30_000 });
    expect(String(s.outboundContents()[0]?.text)).toContain('survive this');
    expect(await again.handle.stop()).toBe(0);
  });

  it('a host that dies (SIGKILL) takes its container with it: the runner sees stdin close and stops cleanly', async () => {
    const s = createTestSession();
    const logFile = path.join(s.paths.root, 'runner.log');
    const host = spawn(
      process.execPath,
      [HOST_SCRIPT, JSON.stringify({ kind: 'docker', settings, cliEntry: BUILT_CLI, workspace: s.paths.root, logFile, name: 'orphan' })],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    const hostExited = new Promise((resolve) => host.once('exit', resolve));
    try {
      await waitFor('runner ready in the container', () => fs.existsSync(logFile) && fs.readFileSync(logFile, 'utf8').includes('[runner] ready'), {
        timeoutMs: 30_000,
      });
      expect(await listRunnerContainers(daemon.cliEnv)).toEqual(['pincer-runner-orphan']);
      host.kill('SIGKILL');
      await hostExited;
      await waitFor('the orphaned container gone', async () => (await listRunnerContainers(daemon.cliEnv)).length === 0, {
        timeoutMs: 20_000,
        intervalMs: 100,
      });
      expect(fs.readFileSync(logFile, 'utf8')).toContain('[runner] stopped');
    } finally {
      host.kill('SIGKILL');
      await dockerCli(['rm', '-f', 'pincer-runner-orphan'], daemon.cliEnv).catch(() => undefined);
    }
  });

  it('one container per name: launching a name that still runs replaces the old container', async () => {
    const s = createTestSession();
    const first = launchTracked(launcher(), { workspace: s.paths.root, env, name: 'dup' });
    await first.ready();
    const second = launchTracked(launcher(), { workspace: s.paths.root, env, name: 'dup' });
    expect(await first.handle.exited).not.toBe(0);
    await second.ready();
    expect(await listRunnerContainers(daemon.cliEnv)).toEqual(['pincer-runner-dup']);
    expect((await replyTo(s, 'only one of us')).text).toContain('only one of us');
    expect(await second.handle.stop()).toBe(0);
  });

  it.each([0, 50, 150])('stop() %i ms after launch, before the runner is up, leaves no container', async (delayMs) => {
    const s = createTestSession();
    const runner = launchTracked(launcher(), { workspace: s.paths.root, env, name: 'early' });
    await new Promise((resolve) => setTimeout(resolve, delayMs)); // the point to stop at, not a wait for a condition
    await runner.handle.stop();
    expect(await listRunnerContainers(daemon.cliEnv)).toEqual([]);
  });

  it(`docker kill at random points, ${FAULT_RUNS} times, loses no message`, async () => {
    const s = createTestSession();
    const ids: string[] = [];
    let inFlight = 0;
    for (let run = 0; run < FAULT_RUNS; run++) {
      // a slow agent, so that most kills land with a batch in flight (docker kill itself takes some 100 ms)
      const runner = launchTracked(launcher(), { workspace: s.paths.root, env: { ...env, MOCK_DELAY_MS: '200' }, name: 'fault' });
      await runner.ready();
      for (let i = 0; i < 3; i++) ids.push(s.chat(`run ${run} message ${i}`).id);
      const killAt = Date.now() + Math.floor(Math.random() * 150);
      await waitFor('kill time', () => Date.now() >= killAt, { intervalMs: 1 });
      // alternately from outside (as an operator or the OOM killer would) and through the handle
      if (run % 2 === 0) await dockerCli(['kill', runner.handle.containerName!], daemon.cliEnv).catch(() => undefined);
      else await runner.handle.kill();
      await runner.handle.exited;
      const rows = s.allInbound();
      expect(rows).toHaveLength(ids.length);
      for (const row of rows) expect(['pending', 'processing', 'completed']).toContain(row.status);
      if (rows.some((row) => row.status === 'processing')) inFlight += 1;
      s.db.prepare(`UPDATE messages_in SET status = 'pending' WHERE status = 'processing'`).run(); // the host's sweep
    }
    const last = launchTracked(launcher(), { workspace: s.paths.root, env, name: 'fault' });
    await last.ready();
    await waitFor('every message completed', () => s.allInbound().every((row) => row.status === 'completed'), { timeoutMs: 60_000, intervalMs: 20 });
    const texts = s
      .outboundContents()
      .map((c) => String(c.text))
      .join('\n');
    for (const id of ids) expect(texts).toContain(`${String(JSON.parse(s.inbound(id).content).text)}</message>`);
    console.log(`[container] ${FAULT_RUNS} container kills: ${inFlight} with a batch in flight; 0 lost`);
    expect(inFlight).toBeGreaterThan(0); // the kills really landed mid-batch
    expect(await last.handle.stop()).toBe(0);
  }, 300_000);

  it('SIGTERM during a query lets the batch finish, then the container is gone', async () => {
    const s = createTestSession();
    const runner = launchTracked(launcher(), { workspace: s.paths.root, env: { ...env, MOCK_DELAY_MS: '1000', PINCER_STOP_GRACE_MS: '4000' }, name: 'busy' });
    await runner.ready();
    const { id } = s.chat('finish me');
    await waitFor('processing', () => s.inbound(id).status === 'processing');
    expect(await runner.handle.stop(8000)).toBe(0);
    expect(s.inbound(id).status).toBe('completed');
    expect(await listRunnerContainers(daemon.cliEnv)).toEqual([]);
  });

  it('fails clearly: a missing session folder at launch, a missing image when the container starts', async () => {
    expect(() => launcher().launch({ workspace: '/nonexistent/session', env })).toThrowError(/session folder not found: \/nonexistent\/session/);
    try {
      launcher().launch({ workspace: '/nonexistent/session', env });
    } catch (err) {
      expect(isContainerError(err, 'workspace')).toBe(true);
    }
    const s = createTestSession();
    const runner = launchTracked(new DockerLauncher({ ...settings, image: 'pincer-no-such-image' }, BUILT_CLI), { workspace: s.paths.root, env });
    expect(await runner.handle.exited).toBe(125);
    expect(runner.stderr()).toMatch(/No such image|not found/i);
  });

  it('builds the image once; other inputs (a tool for the agent) make another image in which the tool runs', async () => {
    const again = await ensureRunnerImage({ image: IMAGE, cliEnv: daemon.cliEnv, appRoot: settings.appRoot });
    expect(again.built).toBe(false);
    const withCat = await ensureRunnerImage({ image: `${IMAGE}-cat`, cliEnv: daemon.cliEnv, appRoot: settings.appRoot, tools: ['cat'] });
    expect(withCat.built).toBe(true);
    expect(withCat.fingerprint).not.toBe(again.fingerprint);
    const passwd = await dockerCli(['run', '--rm', '--network', 'none', `${IMAGE}-cat`, 'cat', '/etc/passwd'], daemon.cliEnv);
    expect(passwd).toMatch(/^root:x:0:0:/);
    // docker import refusing the name at once (its stdin closed under tar) is a clear error, and no build root is left
    const buildRoots = (): string[] => fs.readdirSync(os.tmpdir()).filter((name) => name.startsWith('pincer-image-'));
    const before = buildRoots();
    await expect(ensureRunnerImage({ image: 'Not Valid!', cliEnv: daemon.cliEnv })).rejects.toThrow(/docker import of Not Valid! failed/);
    expect(buildRoots()).toEqual(before);
    await expect(new DockerLauncher(settings, BUILT_CLI).check()).resolves.toBeUndefined();
    await expect(new DockerLauncher({ ...settings, image: 'pincer-missing' }, BUILT_CLI).check()).rejects.toThrow(
      'runner image "pincer-missing" not found: build it with `pincer container image`',
    );
  });

  it('pincer container image builds once, then reports the image current; pincer container clean removes leftovers', async () => {
    const cli = (args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> =>
      new Promise((resolve) => {
        const child = spawn(process.execPath, [BUILT_CLI, 'container', ...args], { env: { ...daemon.cliEnv }, stdio: ['ignore', 'pipe', 'pipe'] });
        let stdout = '';
        let stderr = '';
        child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
        child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
        child.once('exit', (code) => resolve({ code, stdout, stderr }));
      });
    const first = await cli(['image', '--image', 'pincer-cli-image']);
    expect(first.code).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({ image: 'pincer-cli-image', built: true });
    const second = await cli(['image', '--image', 'pincer-cli-image']);
    expect(JSON.parse(second.stdout)).toMatchObject({ image: 'pincer-cli-image', built: false });
    // a leftover: a runner container whose host is gone (created, never started)
    await dockerCli(['create', '--label', 'io.pincer.runner=1', '--name', 'pincer-runner-leftover', IMAGE, 'node'], daemon.cliEnv);
    const clean = await cli(['clean']);
    expect(JSON.parse(clean.stdout)).toEqual({ removed: ['pincer-runner-leftover'] });
    expect(await listRunnerContainers(daemon.cliEnv)).toEqual([]);
    const bad = await cli(['image', '--image', 'Bad Name!']);
    expect(bad).toMatchObject({ code: 2, stderr: 'pincer: bad image name "Bad Name!" (lower case letters, digits, . _ - / :)\n' });
  });

  async function exec(container: string, lines: string[]): Promise<string> {
    return dockerCli(['exec', container, '/usr/local/bin/node', '-e', lines.join('\n')], daemon.cliEnv);
  }
});
