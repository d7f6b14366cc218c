import fs from 'node:fs';
import path from 'node:path';
import { describeIssues } from '../db/content.js';
import { CLI_ENTRY } from '../shared/cli-entry.js';
import { IMAGE_NAME, settingsSchema } from '../shared/settings.js';
import { BwrapLauncher } from './bwrap.js';
import { DockerLauncher } from './docker.js';
import { dockerCliEnvironment } from './env.js';
import { ContainerError } from './errors.js';
import { parseSize, runnerLimits } from './limits.js';
import { ProcessLauncher } from './process.js';
import type { LauncherConfig, RunnerLauncher } from './types.js';

/** The base image (the host's Node and libraries; the app is mounted): `PINCER_CONTAINER_IMAGE`'s default. */
export const DEFAULT_IMAGE: string = settingsSchema(['PINCER_CONTAINER_IMAGE']).parse({}).PINCER_CONTAINER_IMAGE;
export { IMAGE_NAME };

/**
 * The launcher's variables (docs/configuration.md "Sandboxed runners"), parsed by the registry (src/shared/settings.ts);
 * explicit bad values fail with the variable named. `PINCER_RUNNER` has the registry's one default, `auto`: a launcher
 * is always of one concrete kind, so `auto` (the host's to resolve, src/host/runner-kind.ts) means a process here.
 */
const EnvSchema = settingsSchema([
  'PINCER_RUNNER',
  'PINCER_CONTAINER_IMAGE',
  'PINCER_CONTAINER_MEMORY',
  'PINCER_CONTAINER_CPUS',
  'PINCER_CONTAINER_PIDS',
  'PINCER_CONTAINER_FILE_SIZE',
  'PINCER_CONTAINER_NETWORK',
  'PINCER_CONTAINER_USER',
  'PINCER_CONTAINER_ENV',
  'PINCER_BWRAP_NETWORK',
  'PINCER_UNSANDBOXED_SCRIPTS',
]);

/**
 * Read the launcher configuration from the host's environment. `cliEntry` is the compiled CLI a runner runs
 * (default: this build's); the app mounted into a sandbox is the package folder that holds it.
 */
export function loadLauncherConfig(env: NodeJS.ProcessEnv, cliEntry: string = CLI_ENTRY): LauncherConfig & { cliEntry: string } {
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) throw new ContainerError('config', `bad runner configuration: ${describeIssues(parsed.error)}`);
  const e = parsed.data;
  const appRoot = packageRoot(cliEntry);
  return {
    kind: e.PINCER_RUNNER === 'auto' || e.PINCER_RUNNER === 'session-serve' || e.PINCER_RUNNER === 'kubernetes' ? 'process' : e.PINCER_RUNNER,
    cliEntry,
    // a Kubernetes pod is the sandbox of the process runner inside it
    unsandboxedScripts: e.PINCER_UNSANDBOXED_SCRIPTS === '1' || e.PINCER_RUNNER === 'kubernetes',
    docker: {
      image: e.PINCER_CONTAINER_IMAGE,
      appRoot,
      cliEnv: dockerCliEnvironment(env),
      user: e.PINCER_CONTAINER_USER,
      extraEnv: e.PINCER_CONTAINER_ENV,
      memory: e.PINCER_CONTAINER_MEMORY,
      cpus: e.PINCER_CONTAINER_CPUS,
      pids: e.PINCER_CONTAINER_PIDS,
      fileSizeBytes: parseSize(e.PINCER_CONTAINER_FILE_SIZE),
      network: e.PINCER_CONTAINER_NETWORK,
    },
    bwrap: {
      appRoot,
      node: process.execPath,
      isolateNetwork: e.PINCER_BWRAP_NETWORK === 'none',
      extraEnv: e.PINCER_CONTAINER_ENV,
      limits: runnerLimits(env),
    },
  };
}

/** The launcher `config.kind` names. */
export function createLauncher(config: LauncherConfig & { cliEntry: string; spares?: ConstructorParameters<typeof ProcessLauncher>[2] }): RunnerLauncher {
  switch (config.kind) {
    case 'process':
      return new ProcessLauncher(config.cliEntry, config.unsandboxedScripts, config.spares);
    case 'docker':
      return new DockerLauncher(config.docker, config.cliEntry);
    case 'bwrap':
      return new BwrapLauncher(config.bwrap, config.cliEntry);
  }
}

/** The nearest folder above `file` with a package.json: the built app (package.json, dist/, node_modules/). */
export function packageRoot(file: string): string {
  let dir = path.dirname(path.resolve(file));
  for (;;) {
    if (fs.existsSync(path.join(dir, 'package.json'))) return dir;
    const parent = path.dirname(dir);
    if (parent === dir) throw new ContainerError('config', `no package.json above ${file}: cannot tell which folder is the app`);
    dir = parent;
  }
}
