import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { LinkedMcpConnection } from '../providers/types.js';
import { createLogger } from '../shared/log.js';
import { openPincerServer } from './session-server.js';

/**
 * The Pincer MCP server inside the runner's own process, for a provider that also runs there (the built-in runtime):
 * the same server, configuration and tools as `pincer mcp`, with the same environment the child would get, connected
 * through the MCP SDK's linked in-memory transport pair instead of stdio. It saves a Node process per session (≈ 70 MiB
 * RSS). It is no weaker: the child ran as the same user, in the same sandbox, with the same session folder.
 * Throws a SessionConfigError or SessionDbError (one clear line) when the session cannot be served.
 */
export async function connectLinkedPincerServer(env: Record<string, string>): Promise<LinkedMcpConnection> {
  const handle = await openPincerServer(env, createLogger('mcp'));
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  try {
    await handle.server.connect(serverSide);
  } catch (err) {
    await handle.close();
    throw err;
  }
  return {
    transport: clientSide,
    // The client closes its end first (which closes the server's); open questions then end as they do in the child.
    close: () => handle.close(),
  };
}
