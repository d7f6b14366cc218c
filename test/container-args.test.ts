import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { bwrapArgs, bwrapEnvArgs } from '../src/container/bwrap.js';
import { createLauncher, loadLauncherConfig, packageRoot } from '../src/container/config.js';
import { containerNameFor, dockerRunArgs } from '../src/container/docker-args.js';
import { dockerCliEnvironment, providerFamily, runnerEnvironment, sandboxProviderDefaults } from '../src/container/env.js';
import { isContainerError } from '../src/container/errors.js';
import type { DockerSettings } from '../src/container/types.js';
import { identityFiles } from '../src/container/identity.js';
import { resolveFolders } from '../src/container/workspace.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

function session(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-args-'));
  dirs.push(dir);
  fs.mkdirSync(path.join(dir, 'global'));
  return fs.realpathSync(dir);
}

const settings: DockerSettings = {
  image: 'pincer-runner',
  appRoot: '/opt/pincer',
  cliEnv: {},
  extraEnv: [],
  memory: '2g',
  cpus: '1',
  pids: 512,
  network: 'none',
};

/** The value following `flag` each time it occurs. */
function values(args: string[], flag: string): string[] {
  return args.flatMap((arg, i) => (arg === flag ? [args[i + 1]!] : []));
}

describe('docker run arguments', () => {
  it('lock the container down, mount the session, the app read-only and global read-only, and run the runner', () => {
    const root = session();
    const args = dockerRunArgs(settings, {
      containerName: 'pincer-runner-s1',
      launchId: 'launch-1',
      folders: resolveFolders({ workspace: root, env: {} }),
      cliEntry: '/opt/pincer/dist/src/cli/main.js',
      envNames: ['TZ', 'AGENT_PROVIDER'],
    });
    expect(args.slice(0, 6)).toEqual(['run', '-i', '--rm', '--init', '--pull', 'never']);
    for (const flag of ['--read-only', '--init', '--rm']) expect(args).toContain(flag);
    expect(values(args, '--network')).toEqual(['none']);
    expect(values(args, '--name')).toEqual(['pincer-runner-s1']);
    expect(values(args, '--label')).toEqual(['io.pincer.runner=1', 'io.pincer.launch=launch-1']);
    expect(values(args, '--cap-drop')).toEqual(['ALL']);
    expect(values(args, '--security-opt')).toEqual(['no-new-privileges']);
    expect(values(args, '--tmpfs')).toEqual(['/tmp']);
    expect(values(args, '--pids-limit')).toEqual(['512']);
    expect(values(args, '--memory')).toEqual(['2g']);
    expect(values(args, '--cpus')).toEqual(['1']);
    expect(values(args, '--ulimit')).toEqual(['core=0']); // no file-size limit set in these settings
    const stat = fs.statSync(root);
    expect(values(args, '--user')).toEqual([`${stat.uid}:${stat.gid}`]);
    expect(values(args, '--mount')).toEqual([
      `type=bind,src=${root},dst=/workspace`,
      `type=bind,src=${root}/global,dst=/workspace/global,readonly`,
      'type=bind,src=/opt/pincer,dst=/app,readonly',
    ]);
    // values never on the command line: only names, sorted, plus the two fixed settings
    expect(values(args, '-e')).toEqual(['PINCER_WORKSPACE=/workspace', 'HOME=/tmp', 'AGENT_PROVIDER', 'TZ']);
    // the same V8 flags as a process runner
    expect(args.slice(-6)).toEqual([
      'pincer-runner',
      '/usr/local/bin/node',
      '--max-semi-space-size=1',
      '--liftoff-only',
      '/app/dist/src/cli/main.js',
      'runner',
    ]);
  });

  it('mount the group folder and the global folder read-only, and honour an explicit user and network', () => {
    const root = session();
    const group = session();
    const global = session();
    const args = dockerRunArgs(
      { ...settings, user: '1000:1000', network: 'pincer-egress' },
      {
        containerName: 'n',
        launchId: 'l',
        folders: resolveFolders({ workspace: root, groupDir: group, globalDir: global, env: {} }),
        cliEntry: '/opt/pincer/dist/src/cli/main.js',
        envNames: [],
        identity: { passwd: '/tmp/id/passwd', group: '/tmp/id/group' },
      },
    );
    expect(values(args, '--mount')).toContain('type=bind,src=/tmp/id/passwd,dst=/etc/passwd,readonly');
    expect(values(args, '--mount')).toContain('type=bind,src=/tmp/id/group,dst=/etc/group,readonly');
    // the group's folder is read-only to every session; nothing is mounted over the session's own agent/
    expect(values(args, '--mount')).toContain(`type=bind,src=${group},dst=/workspace/group,readonly`);
    expect(values(args, '--mount').filter((m) => m.includes('/workspace/agent'))).toEqual([]);
    expect(values(args, '--mount')).toContain(`type=bind,src=${global},dst=/workspace/global,readonly`);
    expect(values(args, '--user')).toEqual(['1000:1000']);
    expect(values(args, '--network')).toEqual(['pincer-egress']);
  });

  it.each([
    ['s1', 'pincer-runner-s1'],
    ['group/thread:42', 'pincer-runner-group-thread-42'],
    ['a b', 'pincer-runner-a-b'],
  ])('container name for %j is %j', (name, expected) => {
    expect(containerNameFor(name)).toBe(expected);
  });

  it('refuse a missing session, group or global folder with a workspace error', () => {
    const root = session();
    for (const options of [{ workspace: '/nope' }, { workspace: root, groupDir: '/nope-group' }, { workspace: root, globalDir: '/nope-global' }]) {
      let caught: unknown;
      try {
        resolveFolders({ ...options, env: {} });
      } catch (err) {
        caught = err;
      }
      expect(isContainerError(caught, 'workspace')).toBe(true);
      expect((caught as Error).message).toMatch(/folder not found: \/nope/);
    }
  });
});

describe('the runner environment in a sandbox', () => {
  const host = {
    PATH: '/usr/bin',
    HOME: '/root',
    AGENT_PROVIDER: 'claude-code',
    TZ: 'Europe/Berlin',
    NANOCLAW_ADMIN_USER_ID: 'u1',
    PINCER_LOG_LEVEL: 'debug',
    PINCER_POLL_IDLE_MS: '900',
    PINCER_ATTACHMENT_ALLOW_HOSTS: '10.0.0.0/8',
    PINCER_HOME: '/srv/pincer',
    PINCER_HTTP_TOKEN: 'secret-http',
    PINCER_RUNNER: 'docker',
    PINCER_DOCKER_IMAGE: 'x',
    PINCER_CONTAINER_IMAGE: 'y',
    PINCER_SOMETHING_TOKEN: 'secret-2',
    DOCKER_HOST: 'unix:///x.sock',
    ANTHROPIC_API_KEY: 'sk-ant',
    ANTHROPIC_BASE_URL: 'http://127.0.0.1:9',
    OPENAI_API_KEY: 'sk-openai',
    MOCK_DELAY_MS: '5',
    AWS_SECRET_ACCESS_KEY: 'aws',
    EMPTY: '',
  };

  it('passes the runner settings and the configured provider credentials only (never the admin user id)', () => {
    expect(runnerEnvironment(host)).toEqual({
      AGENT_PROVIDER: 'claude-code',
      TZ: 'Europe/Berlin',
      PINCER_LOG_LEVEL: 'debug',
      PINCER_POLL_IDLE_MS: '900',
      PINCER_ATTACHMENT_ALLOW_HOSTS: '10.0.0.0/8',
      ANTHROPIC_API_KEY: 'sk-ant',
      ANTHROPIC_BASE_URL: 'http://127.0.0.1:9',
    });
  });

  it.each([
    ['codex', ['OPENAI_API_KEY']],
    ['opencode', ['OPENAI_API_KEY']],
    ['mock', ['MOCK_DELAY_MS']],
    ['auto', ['ANTHROPIC_API_KEY', 'ANTHROPIC_BASE_URL', 'MOCK_DELAY_MS', 'OPENAI_API_KEY']],
    ['', ['ANTHROPIC_API_KEY', 'ANTHROPIC_BASE_URL', 'MOCK_DELAY_MS', 'OPENAI_API_KEY']],
    ['no-such-provider', []],
  ])('provider %j gets its own variables %j', (provider, expected) => {
    const env = runnerEnvironment({ ...host, AGENT_PROVIDER: provider });
    const providerNames = Object.keys(env)
      .filter((name) => /^(ANTHROPIC|OPENAI|MOCK)_/.test(name))
      .sort();
    expect(providerNames).toEqual(expected);
  });

  it('passes extra names asked for, and nothing of the host otherwise', () => {
    const env = runnerEnvironment({ ...host, AGENT_PROVIDER: 'mock', HTTPS_PROXY: 'http://proxy:3128' }, ['HTTPS_PROXY']);
    expect(env.HTTPS_PROXY).toBe('http://proxy:3128');
    for (const name of [
      'PATH',
      'HOME',
      'PINCER_HOME',
      'PINCER_HTTP_TOKEN',
      'PINCER_RUNNER',
      'PINCER_DOCKER_IMAGE',
      'PINCER_CONTAINER_IMAGE',
      'PINCER_SOMETHING_TOKEN',
      'DOCKER_HOST',
      'AWS_SECRET_ACCESS_KEY',
      'EMPTY',
    ]) {
      expect(env).not.toHaveProperty(name);
    }
  });

  it.each([
    ['claude', { CLAUDE_CONFIG_DIR: '/workspace/.claude' }],
    ['auto', { CLAUDE_CONFIG_DIR: '/workspace/.claude', CODEX_SANDBOX_MODE: 'danger-full-access' }],
    ['mock', {}],
  ])('keeps %s state in the session folder, never at a host path', (provider, expected) => {
    expect(sandboxProviderDefaults({ AGENT_PROVIDER: provider, CLAUDE_CONFIG_DIR: '/root/.claude' })).toEqual(expected);
    expect(runnerEnvironment({ AGENT_PROVIDER: provider, CLAUDE_CONFIG_DIR: '/root/.claude' })).not.toHaveProperty('CLAUDE_CONFIG_DIR');
  });

  it("runs Codex without its own sandbox inside Pincer's, unless CODEX_SANDBOX_MODE is set", () => {
    expect(sandboxProviderDefaults({ AGENT_PROVIDER: 'codex' })).toEqual({ CODEX_SANDBOX_MODE: 'danger-full-access' });
    expect(sandboxProviderDefaults({ AGENT_PROVIDER: 'codex', CODEX_SANDBOX_MODE: 'read-only' })).toEqual({});
  });

  it('gives the docker CLI its connection settings only', () => {
    expect(dockerCliEnvironment(host)).toEqual({ PATH: '/usr/bin', HOME: '/root', DOCKER_HOST: 'unix:///x.sock' });
  });

  it.each([
    ['Claude-Code', 'claude'],
    ['codex-app-server', 'codex'],
    ['echo', 'mock'],
    ['default', 'auto'],
    [undefined, 'auto'],
  ])('provider name %j is the %j family', (name, family) => {
    expect(providerFamily(name)).toBe(family);
  });
});

describe('launcher configuration', () => {
  const cli = path.resolve('dist/src/cli/main.js');

  it('defaults to a child process; docker settings have safe defaults', () => {
    const config = loadLauncherConfig({ PATH: '/usr/bin', DOCKER_HOST: 'unix:///d.sock', PINCER_HTTP_TOKEN: 't' }, cli);
    expect(config.kind).toBe('process');
    expect(config.docker).toMatchObject({ image: 'pincer-node', memory: '2g', cpus: '1', pids: 512, fileSizeBytes: 2 ** 30, network: 'none', extraEnv: [] });
    const limited = dockerRunArgs(config.docker, {
      containerName: 'pincer-runner-s1',
      launchId: 'launch-1',
      folders: resolveFolders({ workspace: session(), env: {} }),
      cliEntry: '/opt/pincer/dist/src/cli/main.js',
      envNames: [],
    });
    expect(values(limited, '--ulimit')).toEqual([`fsize=${2 ** 30}`, 'core=0']);
    expect(config.docker.appRoot).toBe(path.resolve('.'));
    expect(config.docker.cliEnv).toEqual({ PATH: '/usr/bin', DOCKER_HOST: 'unix:///d.sock' });
    expect(createLauncher(config).kind).toBe('process');
  });

  it('reads every variable', () => {
    const config = loadLauncherConfig(
      {
        PINCER_RUNNER: 'docker',
        PINCER_CONTAINER_IMAGE: 'pincer/runner:2',
        PINCER_CONTAINER_MEMORY: '768m',
        PINCER_CONTAINER_CPUS: '0.5',
        PINCER_CONTAINER_PIDS: '64',
        PINCER_CONTAINER_NETWORK: 'egress',
        PINCER_CONTAINER_USER: '1000:1000',
        PINCER_CONTAINER_ENV: 'HTTPS_PROXY, NO_PROXY',
        PINCER_BWRAP_NETWORK: 'host',
      },
      cli,
    );
    expect(config.docker).toMatchObject({
      image: 'pincer/runner:2',
      memory: '768m',
      cpus: '0.5',
      pids: 64,
      network: 'egress',
      user: '1000:1000',
      extraEnv: ['HTTPS_PROXY', 'NO_PROXY'],
    });
    expect(config.bwrap.isolateNetwork).toBe(false);
    expect(createLauncher(config).kind).toBe('docker');
    expect(createLauncher({ ...config, kind: 'bwrap' }).kind).toBe('bwrap');
  });

  it.each([
    [{ PINCER_RUNNER: 'firecracker' }, /PINCER_RUNNER/],
    [{ PINCER_CONTAINER_MEMORY: 'lots' }, /PINCER_CONTAINER_MEMORY: like 512m or 2g/],
    [{ PINCER_CONTAINER_CPUS: 'two' }, /PINCER_CONTAINER_CPUS/],
    [{ PINCER_CONTAINER_PIDS: '-1' }, /PINCER_CONTAINER_PIDS/],
    [{ PINCER_CONTAINER_USER: 'root' }, /PINCER_CONTAINER_USER: uid or uid:gid/],
    [{ PINCER_CONTAINER_IMAGE: 'Bad Name' }, /PINCER_CONTAINER_IMAGE/],
  ])('fails closed on %j', (env, message) => {
    let caught: unknown;
    try {
      loadLauncherConfig(env, cli);
    } catch (err) {
      caught = err;
    }
    expect(isContainerError(caught, 'config')).toBe(true);
    expect((caught as Error).message).toMatch(message);
  });

  it('finds the app folder above the CLI entry', () => {
    expect(packageRoot(cli)).toBe(path.resolve('.'));
  });
});

describe('bwrap arguments', () => {
  it('a fresh root with /usr and /etc read-only, the session at /workspace, the app read-only, no network, a clean env', () => {
    const root = session();
    const args = bwrapArgs(
      { appRoot: '/opt/pincer', node: process.execPath, isolateNetwork: true, extraEnv: [] },
      resolveFolders({ workspace: root, env: {} }),
      '/opt/pincer/dist/src/cli/main.js',
    );
    expect(args).toContain('--unshare-all');
    expect(args).not.toContain('--share-net');
    for (const flag of ['--die-with-parent', '--clearenv', '--new-session']) expect(args).toContain(flag);
    const joined = args.join(' ');
    expect(joined).toContain(`--bind ${root} /workspace`);
    expect(joined).toContain(`--ro-bind ${root}/global /workspace/global`);
    expect(joined).toContain('--ro-bind /opt/pincer /app');
    expect(joined).toContain('--ro-bind /usr /usr');
    expect(joined).toContain('--cap-drop ALL');
    expect(joined).toContain('--ro-bind-try /etc/passwd /etc/passwd');
    expect(joined).not.toMatch(/--ro-bind \/etc \/etc|shadow/);
    // the environment is never on the command line (any local user reads /proc/<pid>/cmdline): it goes through fd 3
    expect(joined).not.toContain('--setenv');
    expect(joined).toContain('--clearenv --args 3');
    const envArgs = bwrapEnvArgs({ AGENT_PROVIDER: 'mock', TZ: 'UTC' }).join(' ');
    expect(envArgs).toContain('--setenv AGENT_PROVIDER mock');
    expect(envArgs).toContain('--setenv PINCER_WORKSPACE /workspace');
    expect(args.slice(-5)).toEqual([expect.stringMatching(/node$/), '--max-semi-space-size=1', '--liftoff-only', '/app/dist/src/cli/main.js', 'runner']);
    const shared = bwrapArgs(
      { appRoot: '/opt/pincer', node: process.execPath, isolateNetwork: false, extraEnv: [] },
      resolveFolders({ workspace: root, env: {} }),
      '/opt/pincer/dist/src/cli/main.js',
    );
    expect(shared).toContain('--share-net');
  });

  it("bind the group's folder read-only at /workspace/group, after the session, and nothing over the session's own agent/", () => {
    const root = session();
    const group = session();
    const args = bwrapArgs(
      { appRoot: '/opt/pincer', node: process.execPath, isolateNetwork: true, extraEnv: [] },
      resolveFolders({ workspace: root, groupDir: group, env: {} }),
      '/opt/pincer/dist/src/cli/main.js',
    );
    const at = args.indexOf(group);
    expect(args.slice(at - 1, at + 2)).toEqual(['--ro-bind', group, '/workspace/group']);
    expect(at).toBeGreaterThan(args.indexOf('/workspace')); // a later mount covers the session folder's group/
    expect(args.filter((arg) => arg.startsWith('/workspace/agent'))).toEqual([]);
  });
});

describe('identity files for the container user', () => {
  it('name the runner uid, are shared per uid:gid, and refuse a folder that is not private', () => {
    const root = path.join(session(), 'identity');
    const files = identityFiles('4242:4343', root);
    expect(fs.readFileSync(files.passwd, 'utf8')).toContain('pincer:x:4242:4343:pincer runner:/tmp:/bin/sh\n');
    expect(fs.readFileSync(files.group, 'utf8')).toContain('pincer:x:4343:\n');
    expect(identityFiles('4242:4343', root)).toEqual(files);
    expect(fs.readFileSync(identityFiles('0:0', root).passwd, 'utf8')).not.toContain('pincer:');
    const open = path.join(session(), 'open');
    fs.mkdirSync(open, { mode: 0o777 });
    fs.chmodSync(open, 0o777);
    expect(() => identityFiles('1:1', open)).toThrowError(/is not a private folder of this user/);
    const link = path.join(session(), 'link');
    fs.symlinkSync(root, link);
    expect(() => identityFiles('1:1', link)).toThrowError(/is not a private folder of this user/);
  });
});
