import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { waitFor } from './wait.js';

/**
 * A private Docker daemon for tests (CONTAINER-NOTES.md): its own data and exec roots and socket, leaving the host's
 * network alone. Available only where `dockerd` is installed (Debian's docker.io) and we are root.
 */
export function dockerAvailable(): boolean {
  return process.getuid?.() === 0 && spawnSync('sh', ['-c', 'command -v dockerd && command -v docker'], { stdio: 'ignore' }).status === 0;
}

export interface DockerDaemon {
  /** DOCKER_HOST for clients of this daemon. */
  host: string;
  env: NodeJS.ProcessEnv;
  docker(...args: string[]): string;
  stop(): Promise<void>;
}

export async function startDockerDaemon(): Promise<DockerDaemon> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-dockerd-'));
  const sock = path.join(dir, 'docker.sock');
  fs.mkdirSync(path.join(dir, 'exec'));
  const daemon: ChildProcess = spawn(
    'dockerd',
    ['--data-root', path.join(dir, 'data'), '--exec-root', path.join(dir, 'exec'), '--pidfile', path.join(dir, 'exec', 'dockerd.pid'), '-H', `unix://${sock}`,
      '--iptables=false', '--ip-forward=false', '--ip-masq=false', '--bridge=none'],
    { stdio: 'ignore' },
  );
  const env = { ...process.env, DOCKER_HOST: `unix://${sock}` };
  const docker = (...args: string[]): string => execFileSync('docker', args, { env, encoding: 'utf8' });
  await waitFor('dockerd answering', () => spawnSync('docker', ['info'], { env, stdio: 'ignore' }).status === 0, { timeoutMs: 30_000, intervalMs: 200 });
  return {
    host: env.DOCKER_HOST,
    env,
    docker,
    stop: async () => {
      const exited = new Promise((resolve) => daemon.once('exit', resolve));
      daemon.kill('SIGTERM');
      await exited;
      spawnSync('umount', [path.join(dir, 'exec', 'netns', 'default')], { stdio: 'ignore' });
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Build the runner image with docker/build-image.sh against `daemon`. */
export function buildRunnerImage(daemon: DockerDaemon, image: string): void {
  const script = fileURLToPath(new URL('../../docker/build-image.sh', import.meta.url));
  execFileSync(script, [image], { env: daemon.env, stdio: ['ignore', 'ignore', 'pipe'] });
}
