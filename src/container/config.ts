import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { describeIssues } from '../db/content.js';
import { CLI_ENTRY } from '../shared/cli-entry.js';
import { BwrapLauncher } from './bwrap.js';
import { DockerLauncher } from './docker.js';
import { dockerCliEnvironment } from './env.js';
import { ContainerError } from './errors.js';
import { ProcessLauncher } from './process.js';
import type { LauncherConfig, RunnerLauncher } from './types.js';

/** The base image (the host's Node and libraries; the app is mounted): `PINCER_CONTAINER_IMAGE`. */
export const DEFAULT_IMAGE = 'pincer-node';
/** A docker image reference as Pincer accepts it: lower case, `name[:tag]`, optional path. */
export const IMAGE_NAME = /^[a-z0-9][a-z0-9_.\-/:]*$/;

const names = z
  .string()
  .default('')
  .transform((list) => list.split(',').map((name) => name.trim()).filter(Boolean));

/** The launcher's variables (docs/configuration.md "Sandboxed runners"); explicit bad values fail with the variable named. */
const EnvSchema = z.object({
  // `auto` is the host's to resolve (src/host/runner-kind.ts); a launcher is always of one concrete kind
  PINCER_RUNNER: z.enum(['auto', 'process', 'docker', 'bwrap', 'session-serve', 'kubernetes']).default('process'),
  PINCER_CONTAINER_IMAGE: z.string().regex(IMAGE_NAME, 'a docker image name').default(DEFAULT_IMAGE),
  PINCER_CONTAINER_MEMORY: z.string().regex(/^\d+[bkmg]?$/i, 'like 512m or 2g').default('2g'),
  PINCER_CONTAINER_CPUS: z.string().regex(/^\d+(\.\d+)?$/, 'a number like 1 or 0.5').default('1'),
  PINCER_CONTAINER_PIDS: z.coerce.number().int().positive().default(512),
  PINCER_CONTAINER_NETWORK: z.string().min(1).default('none'),
  PINCER_CONTAINER_USER: z.string().regex(/^\d+(:\d+)?$/, 'uid or uid:gid').optional(),
  PINCER_CONTAINER_ENV: names,
  PINCER_BWRAP_NETWORK: z.enum(['none', 'host']).default('none'),
  PINCER_UNSANDBOXED_SCRIPTS: z.enum(['', '0', '1']).default(''),
});

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
      network: e.PINCER_CONTAINER_NETWORK,
    },
    bwrap: {
      appRoot,
      node: process.execPath,
      isolateNetwork: e.PINCER_BWRAP_NETWORK === 'none',
      extraEnv: e.PINCER_CONTAINER_ENV,
    },
  };
}

/** The launcher `config.kind` names. */
export function createLauncher(config: LauncherConfig & { cliEntry: string }): RunnerLauncher {
  switch (config.kind) {
    case 'process':
      return new ProcessLauncher(config.cliEntry, config.unsandboxedScripts);
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
