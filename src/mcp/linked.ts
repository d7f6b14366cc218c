import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { LinkedMcpConnection } from '../providers/types.js';
import { createLogger, type Logger } from '../shared/log.js';
import { openPincerServer } from './session-server.js';
import { MAX_MESSAGE_BYTES, refusalAnswer, refusedLogLine, type OversizedMessage } from './stdio-transport.js';

/**
 * The Pincer MCP server inside the runner's own process, for a provider that also runs there (the built-in runtime):
 * the same server, configuration and tools as `pincer mcp`, with the same environment the child would get, connected
 * through the MCP SDK's linked in-memory transport pair instead of stdio. It saves a Node process per session (≈ 70 MiB
 * RSS). It is no weaker: the child ran as the same user, in the same sandbox, with the same session folder.
 * Throws a SessionConfigError or SessionDbError (one clear line) when the session cannot be served.
 */
export async function connectLinkedPincerServer(env: Record<string, string>): Promise<LinkedMcpConnection> {
  const log = createLogger('mcp');
  const handle = await openPincerServer(env, log);
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  try {
    await handle.server.connect(serverSide);
  } catch (err) {
    await handle.close();
    throw err;
  }
  limitMessageSize(serverSide, log);
  return {
    transport: clientSide,
    // The client closes its end first (which closes the server's); open questions then end as they do in the child.
    close: () => handle.close(),
  };
}

/**
 * The message size limit of `pincer mcp` (stdio-transport.ts), here too: a message to the server over
 * MAX_MESSAGE_BYTES as JSON is not delivered but answered with the same refusal, so a tool behaves the same whichever
 * way it is reached. Wraps the handler the server installed on its end when it connected.
 */
function limitMessageSize(serverSide: InMemoryTransport, log: Logger): void {
  const deliver = serverSide.onmessage;
  if (!deliver) throw new Error('the Pincer MCP server did not take its end of the linked transport');
  serverSide.onmessage = (message, extra) => {
    const bytes = Buffer.byteLength(JSON.stringify(message));
    if (bytes <= MAX_MESSAGE_BYTES) {
      deliver(message, extra);
      return;
    }
    const method = 'method' in message ? message.method : undefined;
    const params = 'params' in message ? (message.params as { name?: unknown } | undefined) : undefined;
    const refused: OversizedMessage = {
      bytes,
      method,
      tool: method === 'tools/call' && typeof params?.name === 'string' ? params.name : undefined,
      id: 'id' in message ? message.id : undefined,
    };
    log.warn(refusedLogLine(refused));
    const answer = refusalAnswer(refused);
    if (answer) void serverSide.send(answer);
  };
}
