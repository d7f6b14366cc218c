import type Database from 'better-sqlite3';
import { CentralStore } from '../../../central-db/store.js';
import { listMcpServerRequests } from '../../../mcp-server-requests.js';
import { describeMcpServer, type McpServers } from '../../../../db/mcp-servers.js';
import { addGroupMcpServer, findGroup, removeGroupMcpServer, setGroupMcpServers } from '../../../mcp-servers.js';
import { requireAdmin } from '../auth.js';
import { readJson } from '../io.js';
import { PincerError } from '../../../../shared/errors.js';
import type { HttpRouteModule } from '../types.js';

/**
 * `GET /v1/groups/<group>/mcp-servers` and `PUT` (the whole list, `{"mcpServers": {…}}`): an agent group's own MCP
 * servers, admin tokens only (a server runs commands as the agent). `POST` adds one (`{"name", "server"}`; a name the
 * group has is 409) and `DELETE …/mcp-servers/<name>` removes one, so two admins changing different servers do not
 * undo each other's change. A change reaches each session at its next runner start. Every answer also has
 * `described`: each server's one line as the CLI and `pincer doctor` print it. `GET /v1/groups/<group>/mcp-server-requests`:
 * the servers its agent asked for (add_mcp_server), each with the admin's decision; `GET /v1/mcp-servers`: both for
 * every group. Built by whoever starts the HTTP channel, on the channel's own connection to the central DB.
 */
export function mcpServerRoutes(db: Database.Database): HttpRouteModule {
  const store = new CentralStore(db);
  return ({ api }) => {
    api.get('/v1/groups/:group/mcp-servers', (c) => {
      requireAdmin(c);
      const group = findGroup(store, c.req.param('group'));
      return c.json(view(group.name, group.mcpServers));
    });

    // every group at once, for the control page's MCP servers view
    api.get('/v1/mcp-servers', (c) => {
      requireAdmin(c);
      const groups = store.listAgentGroups().map((group) => ({
        ...view(group.name, group.mcpServers),
        requests: listMcpServerRequests(db, group.id, 20).map((r) => ({ ...r, described: describeMcpServer(r.server) })),
      }));
      return c.json({ groups });
    });

    api.get('/v1/groups/:group/mcp-server-requests', (c) => {
      requireAdmin(c);
      const group = findGroup(store, c.req.param('group'));
      return c.json({ group: group.name, requests: listMcpServerRequests(db, group.id) });
    });

    api.put('/v1/groups/:group/mcp-servers', async (c) => {
      requireAdmin(c);
      const group = findGroup(store, c.req.param('group'));
      const body = await readJson(c);
      if (typeof body !== 'object' || body === null || !('mcpServers' in body)) {
        throw new PincerError('invalid-input', 'the body is {"mcpServers": {"<name>": {"command": …} | {"type": "http", "url": …}}}', { field: 'mcpServers' });
      }
      return c.json(view(group.name, setGroupMcpServers(store, group, body.mcpServers)));
    });

    api.post('/v1/groups/:group/mcp-servers', async (c) => {
      requireAdmin(c);
      const group = findGroup(store, c.req.param('group'));
      const body = await readJson(c);
      if (typeof body !== 'object' || body === null || typeof (body as { name?: unknown }).name !== 'string' || !('server' in body)) {
        throw new PincerError('invalid-input', 'the body is {"name": "<name>", "server": {"command": …} | {"type": "http", "url": …}}', { field: 'name' });
      }
      const { name, server } = body as { name: string; server: unknown };
      if (Object.hasOwn(group.mcpServers, name)) {
        throw new PincerError('conflict', `agent group ${group.name} already has an MCP server "${name}" (remove it first)`, { field: 'name' });
      }
      return c.json(view(group.name, addGroupMcpServer(store, group, name, server)), 201);
    });

    api.delete('/v1/groups/:group/mcp-servers/:name', (c) => {
      requireAdmin(c);
      const group = findGroup(store, c.req.param('group'));
      return c.json(view(group.name, removeGroupMcpServer(store, group, c.req.param('name'))));
    });
  };
}

function view(group: string, mcpServers: McpServers): { group: string; mcpServers: McpServers; described: Record<string, string> } {
  return { group, mcpServers, described: Object.fromEntries(Object.entries(mcpServers).map(([name, spec]) => [name, describeMcpServer(spec)])) };
}
