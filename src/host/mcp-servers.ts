import type { ConfigFile } from '../db/config-file.js';
import { parseMcpServerName, parseMcpServers, secretNamesOf, type McpServers, type McpServerSpec } from '../db/mcp-servers.js';
import { errorMessage, type Logger } from '../shared/log.js';
import type { CentralStore } from './central-db/store.js';
import type { AgentGroup } from './central-db/types.js';
import { PincerError } from '../shared/errors.js';
import type { McpRelayTarget } from './mcp-relay.js';
import type { SecretsStore } from './secrets.js';

/**
 * The user's own MCP servers of an agent group, as `pincer mcp-server`, `PUT /v1/groups/<group>/mcp-servers` and an
 * approved `add_mcp_server` change them: validated once here (a name of Pincer's own server is refused), stored in the
 * central DB with the group's generation bumped, published into each session's `config.json` at its next runner start.
 */

export function findGroup(store: CentralStore, nameOrId: string): AgentGroup {
  const group = store.findAgentGroup(nameOrId);
  if (!group) {
    const known = store.listAgentGroups().map((g) => g.name);
    throw new PincerError('unknown-group', `unknown agent group "${nameOrId}" (known: ${known.length ? known.join(', ') : 'none yet; start the host once'})`);
  }
  return group;
}

/** Replace every server of the group with `value` (validated). */
export function setGroupMcpServers(store: CentralStore, group: AgentGroup, value: unknown): McpServers {
  const parsed = parseMcpServers(value);
  if (!parsed.ok) throw new PincerError('invalid-input', `invalid mcpServers: ${parsed.error}`, { field: 'mcpServers' });
  store.setMcpServers({ agentGroupId: group.id }, parsed.servers);
  return parsed.servers;
}

/** Add one server (or replace the one of that name when `replace`). */
export function addGroupMcpServer(store: CentralStore, group: AgentGroup, name: string, spec: McpServerSpec | unknown, replace = false): McpServers {
  const named = parseMcpServerName(name);
  if (!named.ok) throw new PincerError('invalid-input', `invalid server name "${name}": ${named.error}`, { field: 'name' });
  if (Object.hasOwn(group.mcpServers, name) && !replace) {
    throw new PincerError('invalid-input', `agent group ${group.name} already has an MCP server "${name}" (remove it first, or pass --replace)`, {
      field: 'name',
    });
  }
  return setGroupMcpServers(store, group, { ...group.mcpServers, [name]: spec });
}

export function removeGroupMcpServer(store: CentralStore, group: AgentGroup, name: string): McpServers {
  if (!Object.hasOwn(group.mcpServers, name)) {
    const known = Object.keys(group.mcpServers);
    throw new PincerError('not-found', `agent group ${group.name} has no MCP server "${name}" (it has: ${known.length ? known.join(', ') : 'none'})`);
  }
  const rest = Object.fromEntries(Object.entries(group.mcpServers).filter(([key]) => key !== name));
  store.setMcpServers({ agentGroupId: group.id }, rest);
  return rest;
}

/**
 * The values of the secrets a runner configuration's MCP servers refer to, from the host's store: only those, and
 * only the ones set (a server whose secret is missing is left out by the runner, which says which). A secrets file
 * that cannot be used is logged once per call and gives nothing: those servers are left out, the session goes on.
 * With the host's MCP relay (`relayed`) an HTTP server's secrets stay on the host: the relay adds them.
 */
export function mcpSecretValues(config: ConfigFile, secrets: SecretsStore, log: Logger, relayed = false): Record<string, string> {
  const specs = Object.values(config.mcpServers ?? {}).filter((spec) => !(relayed && spec.type === 'http'));
  const names = [...new Set(specs.flatMap((spec) => secretNamesOf(spec)))];
  if (names.length === 0) return {};
  let values: ReadonlyMap<string, string>;
  try {
    values = secrets.read();
  } catch (err) {
    log.warn(`MCP servers: ${errorMessage(err)}; servers that need a secret are left out`);
    return {};
  }
  const out: Record<string, string> = {};
  for (const name of names) {
    const value = values.get(name);
    if (value !== undefined) out[name] = value;
  }
  return out;
}

/**
 * Where the MCP relay sends a session's requests for its server `name`: the URL and headers of `servers` (the
 * session's, as the central DB has them now), secret references resolved from the store. The configuration is the
 * allow-list: a name it does not give an HTTP server is `not-found`; a secret the store lacks is `not-ready`.
 */
export function mcpRelayTarget(servers: McpServers, name: string, secrets: SecretsStore): McpRelayTarget {
  const spec = Object.hasOwn(servers, name) ? servers[name] : undefined;
  if (spec?.type !== 'http') {
    const known = Object.entries(servers).flatMap(([key, s]) => (s.type === 'http' ? [key] : []));
    throw new PincerError('not-found', `no HTTP MCP server "${name}" is configured for this session (it has: ${known.length ? known.join(', ') : 'none'})`);
  }
  const needed = secretNamesOf(spec);
  const values = needed.length > 0 ? secrets.read() : new Map<string, string>();
  const missing = needed.filter((secret) => !values.has(secret));
  if (missing.length > 0) {
    throw new PincerError('not-ready', `the MCP server ${name} needs ${missing.map((m) => `"${m}"`).join(', ')}, which the host's secrets store does not have`);
  }
  const headers = Object.fromEntries(Object.entries(spec.headers ?? {}).map(([header, v]) => [header, typeof v === 'string' ? v : values.get(v.secret)!]));
  return { url: new URL(spec.url), headers };
}
