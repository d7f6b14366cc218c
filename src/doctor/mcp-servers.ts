import fs from 'node:fs';
import path from 'node:path';
import { describeMcpServer, secretNamesOf, type McpServers } from '../db/mcp-servers.js';
import { errorMessage } from '../shared/log.js';
import type { McpStartResult } from './mcp-start.js';

/**
 * `pincer doctor`'s look at an agent group's own MCP servers: what each runs, and what would
 * keep it from starting — a secret it refers to that the host's store does not have, a command not found. Then
 * `pincer doctor` starts those with no such problem (mcp-start.ts) and says whether each listed its tools.
 */
export interface McpServerCheck {
  name: string;
  /** one line: `stdio node server.js (env: TOKEN)`, `http https://… (headers: Authorization)` */
  what: string;
  /** what would keep it from starting; empty: nothing found */
  problems: string[];
  /** whether it started when `pincer doctor` started it, and how many tools it listed (absent: not started) */
  started?: McpStartResult;
}

/** `secretNames`: the names set in the host's store, or the line saying why the store cannot be read. */
export function checkMcpServers(servers: McpServers, secretNames: string[] | { error: string }, env: NodeJS.ProcessEnv): McpServerCheck[] {
  return Object.entries(servers).map(([name, spec]) => {
    const problems: string[] = [];
    const wanted = secretNamesOf(spec);
    if (wanted.length > 0 && !Array.isArray(secretNames)) problems.push(`its secrets cannot be read: ${secretNames.error}`);
    else
      for (const secret of wanted)
        if (!(secretNames as string[]).includes(secret)) problems.push(`no secret named "${secret}" in the host's secrets store (pincer secret set ${secret})`);
    if (spec.type !== 'http' && !commandFound(spec.command, env))
      problems.push(`command "${spec.command}" not found${path.isAbsolute(spec.command) ? '' : ' on PATH'}`);
    return { name, what: describeMcpServer(spec), problems };
  });
}

/** The secret names of the store in `home`, or why they cannot be had. */
export function secretNamesIn(read: () => string[]): string[] | { error: string } {
  try {
    return read();
  } catch (err) {
    return { error: errorMessage(err) };
  }
}

function commandFound(command: string, env: NodeJS.ProcessEnv): boolean {
  // A relative path with a slash is the agent folder's: the runner resolves it there, the doctor cannot say.
  if (!path.isAbsolute(command) && command.includes('/')) return true;
  const candidates = path.isAbsolute(command)
    ? [command]
    : (env.PATH ?? '')
        .split(path.delimiter)
        .filter(Boolean)
        .map((dir) => path.join(dir, command));
  return candidates.some((file) => {
    try {
      fs.accessSync(file, fs.constants.X_OK);
      return fs.statSync(file).isFile();
    } catch {
      // not there or not executable: the doctor reports the command as not found
      return false;
    }
  });
}
