import path from 'node:path';
import type { McpServers, McpServerSpec, McpValue } from '../db/mcp-servers.js';
import type { McpServerConfig } from '../providers/types.js';
import { rawSetting } from '../shared/settings-load.js';

/**
 * The user's MCP servers of `config.json` as the providers take them: values resolved, a stdio server's working
 * directory made absolute (relative to the agent's folder), and its environment spelled out (SDKs give a server no
 * environment of their own): the basics a command needs to run (`PATH`, `HOME`, `LANG`, `TZ`, …) plus the server's
 * `env`. Nothing else of the runner's environment reaches a user's server.
 *
 * A secret reference is resolved by `secret(name)`; a server whose secret cannot be had is left out, with the reason.
 *
 * Behind the host's MCP relay (`relay`, src/host/mcp-relay.ts) an HTTP server is the relay's `/<name>` with the
 * session's placeholder as its only header: the host holds the server's URL and headers, secrets included, and adds
 * them on the way, so they are not the runner's to know (and no secret of theirs is on its stdin).
 */

/** The runner's variables a user's stdio server inherits. */
const INHERITED = ['PATH', 'HOME', 'LANG', 'LC_ALL', 'TZ', 'USER', 'LOGNAME', 'SHELL', 'TERM', 'TMPDIR'] as const;

export interface UserServerContext {
  /** the agent's folder (the session's `agent/`): relative `cwd`s are resolved against it */
  agentDir: string;
  env: NodeJS.ProcessEnv;
  /** the value of a secret of the host's store, or undefined when it has none by that name */
  secret: (name: string) => string | undefined;
  /** the host's relay of HTTP servers (`PINCER_MCP_RELAY_URL`) and the placeholder it takes; undefined: none */
  relay?: { url: string; token: string };
}

/** The header the relay's placeholder travels in (a secret for the providers: off command lines, out of shells). */
const RELAY_HEADER = 'Authorization';

export function resolveUserMcpServers(
  specs: McpServers,
  context: UserServerContext,
): { servers: Record<string, McpServerConfig>; leftOut: { name: string; reason: string }[] } {
  const servers: Record<string, McpServerConfig> = {};
  const leftOut: { name: string; reason: string }[] = [];
  for (const [name, spec] of Object.entries(specs)) {
    if (spec.type === 'http' && context.relay) {
      const { url, token } = context.relay;
      servers[name] = { type: 'http', url: `${url}/${name}`, headers: { [RELAY_HEADER]: `Bearer ${token}` }, secretKeys: [RELAY_HEADER] };
      continue;
    }
    const missing: string[] = [];
    const value = (v: McpValue): string => {
      if (typeof v === 'string') return v;
      const found = context.secret(v.secret);
      if (found === undefined) missing.push(v.secret);
      return found ?? '';
    };
    const server = resolveOne(spec, value, context);
    if (missing.length > 0) leftOut.push({ name, reason: `no secret named ${missing.map((m) => `"${m}"`).join(', ')} in the host's secrets store` });
    else servers[name] = server;
  }
  return { servers, leftOut };
}

function resolveOne(spec: McpServerSpec, value: (v: McpValue) => string, context: UserServerContext): McpServerConfig {
  const map = (values: Record<string, McpValue> | undefined): Record<string, string> =>
    Object.fromEntries(Object.entries(values ?? {}).map(([key, v]) => [key, value(v)]));
  const secretKeys = (values: Record<string, McpValue> | undefined): { secretKeys?: string[] } => {
    const keys = Object.entries(values ?? {}).flatMap(([key, v]) => (typeof v === 'string' ? [] : [key]));
    return keys.length > 0 ? { secretKeys: keys } : {};
  };
  if (spec.type === 'http') return { type: 'http', url: spec.url, headers: map(spec.headers), ...secretKeys(spec.headers) };
  const base: Record<string, string> = {};
  for (const name of INHERITED) {
    const v = context.env[name];
    if (v !== undefined) base[name] = v;
  }
  return {
    command: spec.command,
    args: spec.args ?? [],
    env: { ...base, ...map(spec.env) },
    ...(spec.cwd ? { cwd: path.resolve(context.agentDir, spec.cwd) } : {}),
    ...secretKeys(spec.env),
  };
}

/** The host's MCP relay as the runner's environment names it, when the host runs one. */
export function mcpRelayOf(env: NodeJS.ProcessEnv): { relay?: { url: string; token: string } } {
  const url = rawSetting(env, 'PINCER_MCP_RELAY_URL');
  const token = rawSetting(env, 'PINCER_MCP_RELAY_TOKEN');
  return url && token ? { relay: { url, token } } : {};
}
