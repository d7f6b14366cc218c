import { createHash, randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

/**
 * A user's Streamable HTTP MCP server on the test's 127.0.0.1, as a company-internal one would be: the MCP SDK's own
 * server transport (stateful: each client gets an `mcp-session-id`, its requests must carry it), and every request
 * refused with 401 unless it has `Authorization: Bearer <token>`. Its tool `whoami` answers with the digest of the
 * token it was given and the session id; `requests()` is what reached it (method, authorization, session id).
 */
export interface HttpMcpServer {
  url: string;
  requests(): { method: string; authorization: string | undefined; sessionId: string | undefined }[];
  close(): Promise<void>;
}

const servers: HttpMcpServer[] = [];

export const digestOf = (text: string): string => createHash('sha256').update(text).digest('hex');

export async function startHttpMcpServer(token: string): Promise<HttpMcpServer> {
  const seen: ReturnType<HttpMcpServer['requests']> = [];
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const server = http.createServer((req, res) => {
    const sessionId = typeof req.headers['mcp-session-id'] === 'string' ? req.headers['mcp-session-id'] : undefined;
    seen.push({ method: req.method ?? '', authorization: req.headers.authorization, sessionId });
    if (req.headers.authorization !== `Bearer ${token}`) {
      res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'unauthorized' }));
      return;
    }
    const known = sessionId ? transports.get(sessionId) : undefined;
    if (known) return void known.handleRequest(req, res);
    if (sessionId) {
      res.writeHead(404).end();
      return;
    }
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => void transports.set(id, transport),
    });
    transport.onclose = () => {
      if (transport.sessionId) transports.delete(transport.sessionId);
    };
    const mcp = new McpServer({ name: 'test-http', version: '1.0.0' });
    mcp.registerTool('whoami', { description: 'Say which token the server was given', inputSchema: { note: z.string().optional() } }, (_args, extra) => {
      const given = String(extra.requestInfo?.headers.authorization ?? '').replace(/^Bearer /, '');
      return { content: [{ type: 'text', text: `token digest ${digestOf(given)}, session ${transport.sessionId ?? '?'}` }] };
    });
    void mcp.connect(transport).then(() => transport.handleRequest(req, res));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const handle: HttpMcpServer = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`,
    requests: () => [...seen],
    close: async () => {
      await Promise.all([...transports.values()].map((t) => t.close()));
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  servers.push(handle);
  return handle;
}

export async function closeHttpMcpServers(): Promise<void> {
  await Promise.all(servers.splice(0).map((s) => s.close()));
}
