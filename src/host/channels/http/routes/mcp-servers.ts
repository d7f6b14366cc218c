import type Database from 'better-sqlite3';
import { CentralStore } from '../../../central-db/store.js';
import { listMcpServerRequests } from '../../../mcp-server-requests.js';
import { findGroup, setGroupMcpServers } from '../../../mcp-servers.js';
import { requireAdmin } from '../auth.js';
import { readJson } from '../io.js';
import { PincerError } from '../../../../shared/errors.js';
import type { HttpRouteModule } from '../types.js';

/**
 * `GET /v1/groups/<group>/mcp-servers` and `PUT` (the whole list, `{"mcpServers": {…}}`): an agent group's own MCP
 * servers, admin tokens only (a server runs commands as the agent). A change reaches each session at its next runner
 * start. `GET /v1/groups/<group>/mcp-server-requests`: the servers its agent asked for (add_mcp_server), each with the
 * admin's decision; `GET /v1/mcp-servers`: both for every group. Built by whoever starts the HTTP channel, on the channel's own connection to the central DB.
 */
export function mcpServerRoutes(db: Database.Database): HttpRouteModule {
  const store = new CentralStore(db);
  return ({ api }) => {
    api.get('/v1/groups/:group/mcp-servers', (c) => {
      requireAdmin(c);
      const group = findGroup(store, c.req.param('group'));
      return c.json({ group: group.name, mcpServers: group.mcpServers });
    });

    // every group at once, for the control page's MCP servers view
    api.get('/v1/mcp-servers', (c) => {
      requireAdmin(c);
      const groups = store
        .listAgentGroups()
        .map((group) => ({ group: group.name, mcpServers: group.mcpServers, requests: listMcpServerRequests(db, group.id, 20) }));
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
      const servers = setGroupMcpServers(store, group, body.mcpServers);
      return c.json({ group: group.name, mcpServers: servers });
    });
  };
}
