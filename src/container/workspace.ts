import fs from 'node:fs';
import path from 'node:path';
import { ContainerError } from './errors.js';
import type { LaunchOptions } from './types.js';

/** The host folders a sandboxed runner sees, checked: a bind mount of a missing folder must fail here, clearly. */
export interface RunnerFolders {
  workspace: string;
  /** bound read-only at /workspace/group when set. */
  groupDir: string | undefined;
  /** mounted read-only at /workspace/global: the given folder, else the session's own `global/` if present. */
  globalDir: string | undefined;
  /** owner of the session folder, `uid:gid`: the runner must be able to write its DB files. */
  owner: string;
  /** the folder of the host's credential proxy socket, bound read-only at `SANDBOX_PROXY_DIR`. */
  proxySocketDir: string | undefined;
  /** the folder of the host's OTLP relay socket, bound read-only at `SANDBOX_OTLP_DIR`. */
  traceRelayDir: string | undefined;
}

/** Where a sandbox sees its agent group's folder, read-only (the session folder's `group/`). */
export const SANDBOX_GROUP_DIR = '/workspace/group';

/** Where a sandbox sees the credential proxy's socket folder. */
export const SANDBOX_PROXY_DIR = '/run/pincer-proxy';

/** Where a sandbox sees the OTLP relay's socket folder. */
export const SANDBOX_OTLP_DIR = '/run/pincer-otlp';

/**
 * The runner variables naming the proxy's and the trace relay's sockets inside the sandbox, when there are some. With
 * the relay, the sandbox's spans go to the runner's loopback forward of it: never to the host's collector, whose
 * address and headers stay on the host.
 */
export function sandboxProxyEnv(options: LaunchOptions): Record<string, string> {
  const out: Record<string, string> = {};
  if (options.credentialProxySocket) out.PINCER_CREDENTIAL_PROXY_SOCKET = path.posix.join(SANDBOX_PROXY_DIR, path.basename(options.credentialProxySocket));
  if (options.traceRelay) {
    out.PINCER_TRACE_RELAY_SOCKET = path.posix.join(SANDBOX_OTLP_DIR, path.basename(options.traceRelay.socket));
    out.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT = `http://127.0.0.1:${options.traceRelay.port}/v1/traces`;
  }
  return out;
}

export function resolveFolders(options: LaunchOptions): RunnerFolders {
  const workspace = requireDirectory(options.workspace, 'session folder');
  const groupDir = options.groupDir === undefined ? undefined : requireDirectory(options.groupDir, 'group folder');
  let globalDir = options.globalDir === undefined ? undefined : requireDirectory(options.globalDir, 'global folder');
  const ownGlobal = path.join(workspace, 'global');
  if (globalDir === undefined && isDirectory(ownGlobal)) globalDir = ownGlobal;
  const stat = fs.statSync(workspace);
  const proxySocketDir = options.credentialProxySocket ? requireDirectory(path.dirname(options.credentialProxySocket), 'credential proxy folder') : undefined;
  const traceRelayDir = options.traceRelay ? requireDirectory(path.dirname(options.traceRelay.socket), 'trace relay folder') : undefined;
  return { workspace, groupDir, globalDir, owner: `${stat.uid}:${stat.gid}`, proxySocketDir, traceRelayDir };
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
    // missing or unreadable: not a folder, and the caller says so
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
