import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { stdinDocumentLine } from '../../src/shared/stdin-document.js';
import type { TestSession } from './session.js';

/**
 * A session with a user's two stdio MCP servers as the host publishes them: a registry server
 * (`@modelcontextprotocol/server-memory`) and the probe (misbehaving-mcp-server.mjs) whose PROBE_TOKEN is a secret
 * reference; the value comes as the runner's stdin line.
 */
export const MEMORY = path.resolve('node_modules/@modelcontextprotocol/server-memory/dist/index.js');
export const PROBE = path.resolve('test/support/misbehaving-mcp-server.mjs');
export const SECRET = 'sk-user-server-secret-31d7e0a2b9';
export const DIGEST = createHash('sha256').update(SECRET).digest('hex');

/** The session's config.json with the two servers, and the stdin line a launcher would write. */
export function withUserServers(session: TestSession): { stdin: string; memoryFile: string } {
  const memoryFile = path.join(session.paths.root, 'memory.jsonl');
  const config = {
    mcpServers: {
      memory: { command: process.execPath, args: [MEMORY], env: { MEMORY_FILE_PATH: memoryFile } },
      probe: { command: process.execPath, args: [PROBE], env: { PROBE_TOKEN: { secret: 'PROBE_TOKEN' } } },
    },
  };
  fs.writeFileSync(path.join(session.paths.root, 'config.json'), JSON.stringify(config));
  return { stdin: stdinDocumentLine({ secrets: { PROBE_TOKEN: SECRET } }), memoryFile };
}

export const ENTITY = { entities: [{ name: 'Ada', entityType: 'person', observations: ['drinks green tea'] }] };

/** The probe's report in a request's text (JSON inside a JSON string: quotes escaped once or twice). */
export function probeReport(text: string): Record<string, unknown> | undefined {
  const unescaped = text.replaceAll('\\\\\\"', '"').replaceAll('\\"', '"');
  const found = /\{"name":"PROBE_TOKEN","set":[^}]*\}/.exec(unescaped)?.[0];
  return found ? (JSON.parse(found) as Record<string, unknown>) : undefined;
}

/** Everything in the session folder that holds the secret (the agent's to read: must be nothing). */
export function sessionFilesWithSecret(session: TestSession): string[] {
  return fs
    .readdirSync(session.paths.root, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.join(entry.parentPath, entry.name))
    .filter((file) => fs.readFileSync(file).includes(SECRET));
}
