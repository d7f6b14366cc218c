import type { Command } from 'commander';
import fs from 'node:fs';
import path from 'node:path';
import { describeMcpServer, SECRET_NAME, type McpValue } from '../db/mcp-servers.js';
import { CentralStore, openCentralDb } from '../host/central-db/store.js';
import { resolveHome } from '../host/config.js';
import { prepareHome } from '../host/home.js';
import { addGroupMcpServer, findGroup, removeGroupMcpServer } from '../host/mcp-servers.js';
import { PincerError } from '../shared/errors.js';

/**
 * `pincer mcp-server add|list|remove`: an agent group's own MCP servers, in the home's central DB. Each session gets
 * them at its next runner start (config.json), with every provider. Secret values are references to the host's
 * secrets store (`--env-secret NAME=SECRET`, `--header-secret`), never written in clear anywhere the agent can read.
 */
const HOME_HELP = 'data directory (default: PINCER_HOME, else ~/.pincer)';
const collect = (value: string, all: string[]): string[] => [...all, value];

interface AddOptions {
  url?: string;
  env: string[];
  envSecret: string[];
  header: string[];
  headerSecret: string[];
  cwd?: string;
  json?: string;
  replace?: boolean;
  home?: string;
}

export function registerMcpServerCommands(program: Command): void {
  const mcp = program.command('mcp-server').description("an agent group's own MCP servers, besides Pincer's (docs/mcp-servers.md)");

  mcp
    .command('add <group> <name> [command...]')
    .description('add a server: a stdio command after --, or --url for a Streamable HTTP server')
    .option('--url <url>', 'a Streamable HTTP server instead of a command')
    .option('--env <NAME=value>', 'an environment variable of a stdio server, in clear (repeat for more)', collect, [] as string[])
    .option('--env-secret <NAME=secret>', "an environment variable whose value is the host's secret of that name", collect, [] as string[])
    .option('--header <Name=value>', 'a request header of an HTTP server, in clear', collect, [] as string[])
    .option('--header-secret <Name=secret>', "a request header whose value is the host's secret of that name", collect, [] as string[])
    .option('--cwd <dir>', "a stdio server's working directory (relative: to the agent's folder)")
    .option('--json <spec>', 'the whole server as JSON ({"command": …} or {"type": "http", "url": …}) instead of the flags')
    .option('--replace', 'replace a server of that name')
    .option('--home <dir>', HOME_HELP)
    .action((groupName: string, name: string, command: string[], options: AddOptions) => {
      const spec = specFrom(command, options);
      withStore(options.home, (store) => {
        const group = findGroup(store, groupName);
        const servers = addGroupMcpServer(store, group, name, spec, options.replace === true);
        process.stderr.write(
          `agent group ${group.name}: MCP server "${name}" ${describeMcpServer(servers[name]!)}; sessions get it at their next runner start\n`,
        );
      });
    });

  mcp
    .command('list [group]')
    .description("list the groups' MCP servers (one group's with its name)")
    .option('--json', 'as JSON: {"<group>": {"<server>": {…}}}')
    .option('--home <dir>', HOME_HELP)
    .action((groupName: string | undefined, options: { json?: boolean; home?: string }) => {
      withStore(options.home, (store) => {
        const groups = groupName ? [findGroup(store, groupName)] : store.listAgentGroups();
        if (options.json) {
          process.stdout.write(`${JSON.stringify(Object.fromEntries(groups.map((g) => [g.name, g.mcpServers])), null, 2)}\n`);
          return;
        }
        for (const group of groups) {
          const entries = Object.entries(group.mcpServers);
          if (entries.length === 0) process.stdout.write(`${group.name}\t(no MCP servers besides Pincer's)\n`);
          for (const [name, spec] of entries) process.stdout.write(`${group.name}\t${name}\t${describeMcpServer(spec)}\n`);
        }
      });
    });

  mcp
    .command('remove <group> <name>')
    .description('remove a server (sessions lose it at their next runner start)')
    .option('--home <dir>', HOME_HELP)
    .action((groupName: string, name: string, options: { home?: string }) => {
      withStore(options.home, (store) => {
        const group = findGroup(store, groupName);
        removeGroupMcpServer(store, group, name);
        process.stderr.write(`agent group ${group.name}: MCP server "${name}" removed\n`);
      });
    });
}

/** The server the flags describe (validated by the store's one schema, which names any wrong field). */
function specFrom(command: string[], options: AddOptions): unknown {
  if (options.json !== undefined) {
    if (
      command.length > 0 ||
      options.url ||
      options.cwd ||
      options.env.length + options.envSecret.length + options.header.length + options.headerSecret.length > 0
    ) {
      throw new PincerError('invalid-input', '--json is the whole server: give no command or other flags with it');
    }
    try {
      return JSON.parse(options.json) as unknown;
    } catch (err) {
      throw new PincerError('invalid-input', `--json: not JSON: ${(err as Error).message}`);
    }
  }
  if (options.url) {
    if (command.length > 0) throw new PincerError('invalid-input', 'give either a command (after --) or --url, not both');
    if (options.env.length + options.envSecret.length > 0 || options.cwd)
      throw new PincerError('invalid-input', '--env, --env-secret and --cwd are for stdio servers (a command)');
    const headers = { ...pairs('--header', options.header, false), ...pairs('--header-secret', options.headerSecret, true) };
    return { type: 'http', url: options.url, ...(Object.keys(headers).length ? { headers } : {}) };
  }
  if (command.length === 0)
    throw new PincerError('invalid-input', "give the server's command after -- (e.g. -- npx -y @modelcontextprotocol/server-memory) or --url");
  if (options.header.length + options.headerSecret.length > 0)
    throw new PincerError('invalid-input', '--header and --header-secret are for HTTP servers (--url)');
  const env = { ...pairs('--env', options.env, false), ...pairs('--env-secret', options.envSecret, true) };
  const [program, ...args] = command;
  return { command: program, ...(args.length ? { args } : {}), ...(Object.keys(env).length ? { env } : {}), ...(options.cwd ? { cwd: options.cwd } : {}) };
}

function pairs(flag: string, values: string[], secret: boolean): Record<string, McpValue> {
  const out: Record<string, McpValue> = {};
  for (const value of values) {
    const at = value.indexOf('=');
    if (at <= 0) throw new PincerError('invalid-input', `${flag}: expected NAME=${secret ? 'secret' : 'value'}, got "${value}"`);
    const key = value.slice(0, at);
    const rest = value.slice(at + 1);
    if (secret && !SECRET_NAME.test(rest)) throw new PincerError('invalid-input', `${flag} ${key}: "${rest}" is not a secret name (letters, digits, _ . -)`);
    out[key] = secret ? { secret: rest } : rest;
  }
  return out;
}

function withStore(homeOption: string | undefined, run: (store: CentralStore) => void): void {
  const home = resolveHome(process.env, homeOption);
  if (!fs.existsSync(path.join(home, 'pincer.db')))
    throw new PincerError('invalid-input', `no Pincer home at ${home} (no pincer.db); start the host once, or pass --home or PINCER_HOME`);
  prepareHome(home);
  const db = openCentralDb(path.join(home, 'pincer.db'));
  try {
    run(new CentralStore(db, home));
  } finally {
    db.close();
  }
}
