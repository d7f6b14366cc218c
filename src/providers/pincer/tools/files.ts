import type { AgentTool } from '@mariozechner/pi-agent-core';
import { Type } from '@mariozechner/pi-ai';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Confinement } from './confine.js';
import { defineTool } from './define.js';
import { truncateMiddle, type ToolLimits } from './limits.js';

/**
 * The built-in runtime's file tools: `read`, `write` and `edit`, confined to the agent folder (confine.ts) and
 * size-limited (limits.ts). Failures throw: pi-agent-core reports a thrown error to the model as a tool error.
 */
const text = (value: string) => ({ content: [{ type: 'text' as const, text: value }], details: {} });

export function fileTools(confinement: Confinement, limits: ToolLimits): AgentTool[] {
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
        const listing = entries.map((e) => (e.isDirectory() ? `${e.name}/` : e.name)).sort().join('\n');
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

  const write = defineTool({
    name: 'write',
    label: 'Write file',
    description: 'Create or overwrite a file in the agent folder with the given content (folders are created).',
    parameters: Type.Object({
      path: Type.String({ description: 'file path, relative to the agent folder' }),
      content: Type.String({ description: 'the complete new content' }),
    }),
    executionMode: 'sequential',
    execute: async (_id, params) => {
      const file = confinement.resolve(params.path);
      const bytes = Buffer.byteLength(params.content);
      if (bytes > limits.maxWriteBytes) throw new Error(`content is ${bytes} bytes; at most ${limits.maxWriteBytes} per write`);
      await fs.mkdir(path.dirname(file), { recursive: true });
      // Resolve again now the folders exist: a link created meanwhile must not lead out.
      confinement.resolve(params.path);
      await fs.writeFile(file, params.content);
      return text(`wrote ${bytes} bytes to ${confinement.display(file)}`);
    },
  });

  const edit = defineTool({
    name: 'edit',
    label: 'Edit file',
    description: 'Replace one exact occurrence of oldText with newText in a file of the agent folder. oldText must match exactly once.',
    parameters: Type.Object({
      path: Type.String({ description: 'file path, relative to the agent folder' }),
      oldText: Type.String({ description: 'the exact text to replace (must occur exactly once)' }),
      newText: Type.String({ description: 'the replacement text' }),
    }),
    executionMode: 'sequential',
    execute: async (_id, params) => {
      const file = confinement.resolve(params.path);
      const before = await fs.readFile(file, 'utf8');
      if (params.oldText === '') throw new Error('oldText is empty');
      const first = before.indexOf(params.oldText);
      if (first < 0) throw new Error(`oldText not found in ${confinement.display(file)}`);
      if (before.indexOf(params.oldText, first + 1) >= 0) throw new Error(`oldText occurs more than once in ${confinement.display(file)}; include more context`);
      const after = before.slice(0, first) + params.newText + before.slice(first + params.oldText.length);
      if (Buffer.byteLength(after) > limits.maxWriteBytes) throw new Error(`the edited file would exceed ${limits.maxWriteBytes} bytes`);
      await fs.writeFile(file, after);
      const line = before.slice(0, first).split('\n').length;
      return text(`edited ${confinement.display(file)} at line ${line}`);
    },
  });

  return [read, write, edit];
}
