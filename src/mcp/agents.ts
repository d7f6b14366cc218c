import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { insertOutbound } from '../db/messages.js';
import { batchRouting } from './routing.js';
import { label, text } from './schemas.js';
import { textResult, type ToolContext } from './types.js';

/**
 * Tools that reach beyond this session. Both only write a row; the
 * host delivers it to the other agent group, or carries out the action — checking admin rights — and answers with a
 * `system` message.
 */
export function registerAgentTools(server: McpServer, ctx: ToolContext): void {
  const { db } = ctx;

  server.registerTool(
    'send_to_agent',
    {
      description:
        'Send a message to another agent group (another agent with its own folder and sessions). Its answer, if any, ' +
        'comes back as a message from that agent. Returns the new message id.',
      inputSchema: {
        agentGroupId: label('agentGroupId').describe('the id of the target agent group'),
        text: text('text').describe('the message'),
        sessionId: label('sessionId').optional().describe('a particular session of that group (default: its main one)'),
      },
    },
    ({ agentGroupId, text, sessionId }) => {
      const { seq } = insertOutbound(db, {
        kind: 'chat',
        content: { text },
        routing: { channelType: 'agent', platformId: agentGroupId, threadId: sessionId ?? null, inReplyTo: batchRouting(db).inReplyTo },
      });
      return textResult(`Sent to agent group ${agentGroupId} as message ${seq}.`);
    },
  );

  server.registerTool(
    'register_agent_group',
    {
      description:
        'Ask the host to create a new agent group wired to a chat (admin only: the host checks the requesting user). ' +
        'The host answers with a system message saying whether it worked.',
      inputSchema: {
        name: label('name').describe('display name of the agent, e.g. "Research"'),
        folder: z
          .string()
          .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, {
            error: 'folder must be one folder name: letters, digits, ".", "_" or "-", at most 64 characters',
          })
          .describe('folder name of the new group, e.g. "research"'),
        platformId: label('platformId').describe('the chat (messaging group) to connect it to'),
        channelType: label('channelType').describe('the channel of that chat, e.g. "telegram"'),
        triggerRules: z.record(z.string(), z.unknown()).optional().describe('when the agent answers, e.g. {"mention": true}'),
        sessionMode: z.enum(['shared', 'per-thread']).optional().describe('one session for the chat, or one per thread'),
      },
    },
    (request) => {
      const { seq } = insertOutbound(db, {
        kind: 'system',
        content: { action: 'register_agent_group', ...request },
        routing: batchRouting(db),
      });
      return textResult(`Request ${seq} to register agent group "${request.name}" sent; the host answers with a system message.`);
    },
  );
}
