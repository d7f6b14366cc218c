import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { SpawnedProcess, SpawnOptions } from '@anthropic-ai/claude-agent-sdk';

/**
 * Claude Code must not outlive its runner. When the runner is killed (SIGKILL, OOM) the CLI only sees its stdin
 * close, and it then finishes the turn it is in: it keeps calling the model and running tools — writing to the
 * session through MCP — while the host may already have started a new runner on the same batch. On Linux the CLI is
 * therefore started through `setpriv --pdeathsig KILL`, so the kernel kills it the moment the runner dies.
 * Elsewhere, or without setpriv (util-linux), it is started directly, as the SDK would.
 */
export function claudeSpawner(env: Record<string, string | undefined>, onStderr: (data: string) => void): (options: SpawnOptions) => SpawnedProcess {
  const setpriv = process.platform === 'linux' ? findOnPath('setpriv', env.PATH) : undefined;
  return ({ command, args, cwd, env: childEnv, signal }) => {
    const [file, argv] = setpriv ? [setpriv, ['--pdeathsig', 'KILL', '--', command, ...args]] : [command, args];
    const child = spawn(file, argv, { cwd, env: childEnv, signal, stdio: ['pipe', 'pipe', 'pipe'], windowsHide: true });
    child.stderr.setEncoding('utf8').on('data', onStderr);
    return child;
  };
}

function findOnPath(name: string, pathVariable: string | undefined): string | undefined {
  for (const dir of (pathVariable ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, name);
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}
