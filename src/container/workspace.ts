import fs from 'node:fs';
import path from 'node:path';
import { ContainerError } from './errors.js';
import type { LaunchOptions } from './types.js';

/** The host folders a sandboxed runner sees, checked: a bind mount of a missing folder must fail here, clearly. */
export interface RunnerFolders {
  workspace: string;
  /** mounted at /workspace/agent when set. */
  agentDir: string | undefined;
  /** mounted read-only at /workspace/global: the given folder, else the session's own `global/` if present. */
  globalDir: string | undefined;
  /** owner of the session folder, `uid:gid`: the runner must be able to write its DB files. */
  owner: string;
  /** the folder of the host's credential proxy socket, bound read-only at `SANDBOX_PROXY_DIR`. */
  proxySocketDir: string | undefined;
}

/** Where a sandbox sees the credential proxy's socket folder. */
export const SANDBOX_PROXY_DIR = '/run/pincer-proxy';

/** The runner variable naming the proxy socket inside the sandbox, when there is one. */
export function sandboxProxyEnv(options: LaunchOptions): Record<string, string> {
  if (!options.credentialProxySocket) return {};
  return { PINCER_CREDENTIAL_PROXY_SOCKET: path.posix.join(SANDBOX_PROXY_DIR, path.basename(options.credentialProxySocket)) };
}

export function resolveFolders(options: LaunchOptions): RunnerFolders {
  const workspace = requireDirectory(options.workspace, 'session folder');
  const agentDir = options.agentDir === undefined ? undefined : requireDirectory(options.agentDir, 'agent folder');
  let globalDir = options.globalDir === undefined ? undefined : requireDirectory(options.globalDir, 'global folder');
  const ownGlobal = path.join(workspace, 'global');
  if (globalDir === undefined && isDirectory(ownGlobal)) globalDir = ownGlobal;
  const stat = fs.statSync(workspace);
  const proxySocketDir = options.credentialProxySocket ? requireDirectory(path.dirname(options.credentialProxySocket), 'credential proxy folder') : undefined;
  return { workspace, agentDir, globalDir, owner: `${stat.uid}:${stat.gid}`, proxySocketDir };
}

function requireDirectory(dir: string, what: string): string {
  const abs = path.resolve(dir);
  if (!isDirectory(abs)) throw new ContainerError('workspace', `${what} not found: ${abs}`);
  return fs.realpathSync(abs);
}

function isDirectory(dir: string): boolean {
  try {
    return fs.statSync(dir).isDirectory();
  } catch {
    return false;
  }
}

/**
 * Where the app's `node_modules` really is when it is a link (a git worktree sharing one install): that folder must
 * be mounted too, read-only at the same path, or the link is dangling inside the sandbox. Undefined for a plain folder.
 */
export function linkedModules(appRoot: string): string | undefined {
  const modules = path.join(appRoot, 'node_modules');
  return fs.lstatSync(modules, { throwIfNoEntry: false })?.isSymbolicLink() ? fs.realpathSync(modules) : undefined;
}
