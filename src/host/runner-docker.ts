import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { exitOf, type LaunchedRunner, type LaunchOptions } from './launchers.js';
import { stopRunner } from './runner-process.js';

/**
 * A runner in a Docker container (PINCER_RUNNER=docker): the session folder is mounted at /workspace, the agent
 * group's folder at /workspace/agent, the shared global folder read-only at /workspace/global. No network, no
 * capabilities, read-only root with a /tmp tmpfs, `--init` so SIGTERM reaches Node (CONTAINER-NOTES.md). The
 * container is named after the session, so a host can find and remove one left by a host that died.
 */
export interface DockerRunnerOptions {
  sessionId: string;
  sessionDir: string;
  agentDir: string;
  globalDir: string;
  image: string;
  /** variables given to the runner: passed by name (`-e KEY`), so values never show in `ps`. */
  env: NodeJS.ProcessEnv;
  logFile: string;
  /** the docker CLI's own environment (DOCKER_HOST, PATH). */
  cliEnv: NodeJS.ProcessEnv;
}

/** Variables a container runner gets from the host: its own settings and provider credentials, nothing else. */
const PASSED = /^(AGENT_PROVIDER|TZ|NANOCLAW_ADMIN_USER_ID|(PINCER|MOCK|ANTHROPIC|CLAUDE|OPENAI|CODEX|OPENCODE)_\w+)$/;
const NOT_PASSED = new Set(['PINCER_HOME', 'PINCER_WORKSPACE', 'PINCER_HTTP_TOKEN', 'PINCER_HTTP_HOST', 'PINCER_RUNNER', 'PINCER_DOCKER_IMAGE']);

export function containerName(sessionId: string): string {
  return `pincer-${sessionId}`;
}

/** The `docker run` arguments for a session's runner. */
export function dockerRunArgs(options: DockerRunnerOptions): string[] {
  const names = Object.keys(options.env).filter((k) => PASSED.test(k) && !NOT_PASSED.has(k) && options.env[k] !== undefined).sort();
  const uid = process.getuid?.() ?? 0;
  const gid = process.getgid?.() ?? 0;
  return [
    'run', '--rm', '--init',
    '--name', containerName(options.sessionId),
    '--network', 'none',
    '--user', `${uid}:${gid}`,
    '--read-only', '--tmpfs', '/tmp',
    '--cap-drop', 'ALL', '--security-opt', 'no-new-privileges',
    '--pids-limit', '512',
    '--mount', `type=bind,src=${options.sessionDir},dst=/workspace`,
    '--mount', `type=bind,src=${options.agentDir},dst=/workspace/agent`,
    '--mount', `type=bind,src=${options.globalDir},dst=/workspace/global,readonly`,
    '-e', 'PINCER_WORKSPACE=/workspace',
    ...names.flatMap((k) => ['-e', k]),
    options.image,
  ];
}

export function spawnDockerRunner(options: DockerRunnerOptions): ChildProcess {
  const log = fs.openSync(options.logFile, 'a');
  const child = spawn('docker', dockerRunArgs(options), {
    env: { ...options.cliEnv, ...pick(options.env) },
    stdio: ['ignore', 'ignore', log],
  });
  fs.closeSync(log);
  return child;
}

/** `LaunchRunner` for Docker: the `docker run` client is the local process; stop and kill also remove the container. */
export function launchDockerRunner(options: LaunchOptions, image: string, cliEnv: NodeJS.ProcessEnv): LaunchedRunner {
  const name = options.name ?? randomUUID().slice(0, 12);
  const session = options.workspace;
  const child = spawnDockerRunner({
    sessionId: name,
    sessionDir: session,
    agentDir: options.agentDir ?? path.join(session, 'agent'),
    globalDir: options.globalDir ?? path.join(session, 'global'),
    image,
    env: options.env,
    logFile: options.logFile ?? '/dev/null',
    cliEnv,
  });
  const exited = exitOf(child);
  return {
    kind: 'docker',
    child,
    // SIGTERM reaches the runner through the client (signal proxy) and `--init`; the container goes with --rm.
    stop: async (graceMs = 5000) => {
      const timer = setTimeout(() => void removeContainer(name, cliEnv), graceMs);
      const code = await stopRunner(child, graceMs + 2000);
      clearTimeout(timer);
      return code;
    },
    kill: async () => {
      await removeContainer(name, cliEnv);
      child.kill('SIGKILL');
      return exited;
    },
  };
}

/** Remove the session's container, running or not (a hard kill, or the leftover of a host that died). */
export function removeContainer(sessionId: string, cliEnv: NodeJS.ProcessEnv): Promise<void> {
  return new Promise((resolve) => execFile('docker', ['rm', '-f', containerName(sessionId)], { env: cliEnv }, () => resolve()));
}

function pick(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(env)) if (PASSED.test(k) && !NOT_PASSED.has(k)) out[k] = v;
  return out;
}
