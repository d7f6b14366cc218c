import type { AgentTool } from '@mariozechner/pi-agent-core';
import { Type } from '@mariozechner/pi-ai';
import fs from 'node:fs/promises';
import { defineTool } from './define.js';
import { editTool, writeTool, type FileToolDeps } from './edit.js';
import { truncateMiddle } from './limits.js';

/**
 * The built-in runtime's file tools: `read` here, `write` and `edit` in edit.ts (planned on a worker), confined to the
 * agent folder (confine.ts) and size-limited (limits.ts). Failures throw: pi-agent-core reports a thrown error to the model as a tool error.
 */
const text = (value: string) => ({ content: [{ type: 'text' as const, text: value }], details: {} });

export function fileTools(deps: FileToolDeps): AgentTool[] {
  const { confinement, limits } = deps;
  const read = defineTool({
    name: 'read',
    label: 'Read file',
    description: `Read a text file in the agent folder. Returns numbered lines; at most ${limits.maxReadLines} lines per call (use offset/limit for more).`,
    parameters: Type.Object({
      path: Type.String({ description: 'file path, relative to the agent folder' }),
      offset: Type.Optional(Type.Integer({ minimum: 1, description: 'first line to read (1-based)' })),
      limit: Type.Optional(Type.Integer({ minimum: 1, description: 'how many lines to read' })),
    }),
    execute: async (_id, params) => {
      const file = confinement.resolve(params.path);
      const stat = await fs.stat(file);
      if (stat.isDirectory()) {
        const entries = await fs.readdir(file, { withFileTypes: true });
        const listing = entries
          .map((e) => (e.isDirectory() ? `${e.name}/` : e.name))
          .sort()
          .join('\n');
        return text(truncateMiddle(listing || '(empty folder)', limits.maxOutputChars));
      }
      const lines = (await fs.readFile(file, 'utf8')).split('\n');
      const start = (params.offset ?? 1) - 1;
      const count = Math.min(params.limit ?? limits.maxReadLines, limits.maxReadLines);
      const slice = lines.slice(start, start + count);
      let body = slice.map((line, i) => `${String(start + i + 1).padStart(6)}\t${line}`).join('\n');
      if (start + count < lines.length) body += `\n… ${lines.length - start - count} more lines (read again with offset ${start + count + 1})`;
      return text(truncateMiddle(body, limits.maxOutputChars));
    },
  });

  return [read, writeTool(deps), editTool(deps)];
}
