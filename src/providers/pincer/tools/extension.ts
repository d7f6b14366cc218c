import type { AgentTool } from '@mariozechner/pi-agent-core';
import type { TSchema } from '@mariozechner/pi-ai';
import type { ExtensionTool } from '../../types.js';
import { truncateMiddle } from './limits.js';

/** An extension's tool as an agent tool: its JSON schema as parameters, its text output size-limited like the others. */
export function extensionTool(tool: ExtensionTool, cwd: string, maxOutputChars: number): AgentTool {
  return {
    name: tool.name,
    label: tool.name,
    description: tool.description,
    parameters: tool.parameters as unknown as TSchema,
    execute: async (_id, params, signal) => {
      const result = await tool.execute(params as Record<string, unknown>, { signal, cwd });
      const content = typeof result === 'string' ? [{ type: 'text' as const, text: result }] : result.content;
      return {
        content: content.map((block) => (block.type === 'text' ? { ...block, text: truncateMiddle(block.text, maxOutputChars) } : block)),
        details: {},
      };
    },
  };
}
