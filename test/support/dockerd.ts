import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { waitFor } from './wait.js';

/**
 * A private Docker daemon for one test file (CONTAINER-NOTES.md): its own data and exec roots and socket under a temp
 * dir, and no iptables, ip_forward, masquerading or bridge, so the host's network is left alone. `stop()` ends it by
 * its pid, unmounts what it left mounted and removes the dir; `dockerdUnavailable()` says why tests must skip.
 */
export interface PrivateDockerd {
  /** `unix://…/docker.sock` */
  host: string;
  /** the docker CLI's environment for this daemon. */
  cliEnv: NodeJS.ProcessEnv;
  dir: string;
  process: ChildProcess;
  stop(): Promise<void>;
}

/** Why a real dockerd cannot run here, or undefined when it can. */
export function dockerdUnavailable(): string | undefined {
  if (!onPath('dockerd') || !onPath('docker')) return 'docker.io is not installed (dockerd/docker not on PATH; .ci/run installs it as root)';
  if (process.getuid?.() !== 0) return 'dockerd needs root and the tests do not run as root';
  return undefined;
}

export function onPath(name: string): boolean {
  return (process.env.PATH ?? '').split(path.delimiter).some((dir) => fs.existsSync(path.join(dir, name)));
}

export async function startPrivateDockerd(): Promise<PrivateDockerd> {
  // short path: the socket path must stay under the 108-byte limit of a unix socket address.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pcd-'));
  const exec = path.join(dir, 'exec');
  fs.mkdirSync(exec);
  const sock = path.join(dir, 'docker.sock');
  const log = fs.openSync(path.join(dir, 'dockerd.log'), 'a');
  const daemon = spawn(
    'dockerd',
    [
      '--data-root',
      path.join(dir, 'data'),
      '--exec-root',
      exec,
      '--pidfile',
      path.join(exec, 'dockerd.pid'),
      '-H',
      `unix://${sock}`,
      '--iptables=false',
      '--ip-forward=false',
      '--ip-masq=false',
      '--bridge=none',
    ],
    { stdio: ['ignore', log, log] },
  );
  fs.closeSync(log);
  const host = `unix://${sock}`;
  const cliEnv: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, DOCKER_HOST: host };
  const stop = async (): Promise<void> => {
    if (daemon.exitCode === null && daemon.signalCode === null) {
      const exited = new Promise((resolve) => daemon.once('exit', resolve));
      daemon.kill('SIGTERM');
      await exited;
    }
    unmountUnder(dir);
    fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitFor('the private dockerd to answer', () => daemon.exitCode === null && answers(cliEnv), { timeoutMs: 30_000, intervalMs: 100 });
  } catch (err) {
    const text = fs.readFileSync(path.join(dir, 'dockerd.log'), 'utf8').split('\n').slice(-5).join('\n');
    await stop();
    throw new Error(`${(err as Error).message}\n${text}`);
  }
  return { host, cliEnv, dir, process: daemon, stop };
}

function answers(cliEnv: NodeJS.ProcessEnv): Promise<boolean> {
  return new Promise((resolve) => execFile('docker', ['version', '--format', '{{.Server.Version}}'], { env: cliEnv }, (err) => resolve(!err)));
}

/** Unmount everything dockerd left under `dir` (its data-root bind, exec/netns/default), deepest first. */
function unmountUnder(dir: string): void {
  const mounts = fs
    .readFileSync('/proc/mounts', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[1])
    .filter((target): target is string => target !== undefined && (target === dir || target.startsWith(`${dir}/`)))
    .sort((a, b) => b.length - a.length);
  for (const target of mounts) {
    try {
      execFileSync('umount', [target], { stdio: 'ignore' });
    } catch {
      execFileSync('umount', ['-l', target], { stdio: 'ignore' });
    }
  }
}

/** The docker CLI, for assertions in tests. */
export function dockerCli(args: string[], cliEnv: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile('docker', args, { env: cliEnv }, (err, stdout, stderr) =>
      err ? reject(new Error(`docker ${args.join(' ')}: ${stderr || err.message}`)) : resolve(stdout),
    ),
  );
}
