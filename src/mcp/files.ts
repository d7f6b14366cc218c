import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { insertOutbound } from '../db/messages.js';
import { batchRouting } from './routing.js';
import { label, text } from './schemas.js';
import { textResult, type McpConfig, type ToolContext } from './types.js';
import { PincerError } from '../shared/errors.js';

/**
 * send_file: copy a file from the workspace into `outbox/<message-id>/` and write a chat row
 * listing it. Only files inside the workspace may leave: the path is resolved through every symlink first.
 */
export function registerFileTools(server: McpServer, ctx: ToolContext): void {
  const { db, config } = ctx;
  server.registerTool(
    'send_file',
    {
      description:
        'Send a file from your workspace to the conversation, optionally with a message. The path is relative to ' +
        'your agent folder or absolute; it must be inside the workspace. Returns the new message id.',
      inputSchema: {
        path: label('path', 4096).describe('the file, relative to your agent folder (e.g. "report.pdf") or absolute'),
        text: text('text').optional().describe('a message to go with the file'),
        filename: label('filename', 255)
          .refine((name) => isPlainFileName(name), { error: 'filename must be a plain file name, without / or \\' })
          .optional()
          .describe('the name the recipient sees (default: the file name of path)'),
      },
    },
    ({ path: given, text, filename }) => {
      const source = resolveInsideWorkspace(config, given);
      const name = filename ?? path.basename(given);
      if (!isPlainFileName(name)) throw new PincerError('invalid-input', `cannot send "${given}": give a filename for it`);
      // The file is in place before the row exists, so whoever delivers the row always finds it.
      const id = randomUUID();
      const dir = path.join(config.paths.outbox, id);
      fs.mkdirSync(dir, { recursive: true });
      try {
        fs.copyFileSync(source, path.join(dir, name));
        const { seq } = insertOutbound(db, {
          id,
          kind: 'chat',
          content: { text: text ?? '', files: [name] },
          routing: batchRouting(db),
        });
        return textResult(`Sent ${name} as message ${seq}.`);
      } catch (err) {
        fs.rmSync(dir, { recursive: true, force: true });
        throw err;
      }
    },
  );
}

/** `file` is below `dir` (not `dir` itself). Both are real paths. */
function isInside(dir: string, file: string): boolean {
  const relative = path.relative(dir, file);
  return relative !== '' && relative !== '..' && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative);
}

function isPlainFileName(name: string): boolean {
  return name !== '.' && name !== '..' && !/[/\\\0]/.test(name);
}

/**
 * The real path of a file the agent named, checked to be a regular file inside the workspace and within the size
 * limit. A relative path is read from `agent/` through its link (outside a container `agent/` links to the agent
 * group's folder), so the allowed places are the real session folder and the real agent folder. Symlinks are resolved
 * before the check, so neither `..` nor a link can point anywhere else.
 */
export function resolveInsideWorkspace(config: McpConfig, given: string): string {
  const candidate = path.resolve(config.paths.agent, given);
  let real: string;
  try {
    real = fs.realpathSync(candidate);
  } catch {
    throw new PincerError('not-found', `file not found: ${given}`);
  }
  // the group's folder is readable to the agent (a link into the home for a process runner): its files may be sent
  const roots = [config.paths.root, config.paths.agent, config.paths.group].flatMap((dir) => {
    try {
      return [fs.realpathSync(dir)];
    } catch {
      // a folder that does not exist has no real path to allow
      return [];
    }
  });
  if (!roots.some((root) => isInside(root, real))) {
    throw new PincerError('outside-workspace', `${given} is outside the workspace (${config.paths.root}): only files inside it can be sent`);
  }
  const stat = fs.statSync(real);
  if (!stat.isFile()) throw new PincerError('invalid-input', `${given} is not a file`);
  if (stat.size > config.maxFileBytes) {
    throw new PincerError('too-large', `${given} is ${stat.size} bytes, over the limit of ${config.maxFileBytes} bytes: compress or split it`);
  }
  return real;
}
