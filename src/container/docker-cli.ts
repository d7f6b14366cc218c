import { execFile } from 'node:child_process';
import { ContainerError } from './errors.js';
import { rawSetting } from '../shared/settings-load.js';

/** One `docker …` command through the CLI; resolves with stdout, rejects with `ContainerError('docker-failed')`. */
export function docker(args: string[], cliEnv: NodeJS.ProcessEnv, timeoutMs = 60_000): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('docker', args, { env: cliEnv, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (!err) {
        resolve(stdout);
        return;
      }
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') {
        reject(new ContainerError('docker-unavailable', 'docker CLI not found on PATH (install docker.io)'));
        return;
      }
      const detail = (stderr || err.message).trim().split('\n').slice(-3).join(' ');
      reject(new ContainerError('docker-failed', `docker ${args[0]} failed: ${detail}`));
    });
  });
}

/** Whether the daemon answers; throws `docker-unavailable` naming DOCKER_HOST when it does not. */
export async function checkDockerDaemon(cliEnv: NodeJS.ProcessEnv): Promise<string> {
  try {
    return (await docker(['version', '--format', '{{.Server.Version}}'], cliEnv, 15_000)).trim();
  } catch (err) {
    const where = rawSetting(cliEnv, 'DOCKER_HOST') ?? 'the default socket';
    const why = err instanceof Error ? err.message : String(err);
    throw new ContainerError('docker-unavailable', `docker daemon at ${where} does not answer: ${why}`);
  }
}

/** `docker rm -f`: kill and remove, ignoring a container that is already gone. */
export async function removeContainer(name: string, cliEnv: NodeJS.ProcessEnv): Promise<void> {
  try {
    await docker(['rm', '-f', name], cliEnv, 30_000);
  } catch (err) {
    if (err instanceof ContainerError && /no such container/i.test(err.message)) return;
    throw err;
  }
}
