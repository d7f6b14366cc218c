import { z } from 'zod';
import { describeIssues } from './content.js';

/**
 * The user's own MCP servers (part of the session folder's contract: `config.json` `mcpServers`, and what the host
 * stores per agent group and per session). One format for every provider, which each converts to its SDK's: a stdio
 * server (`command`, `args`, `env`, `cwd`) or a Streamable HTTP server (`type: "http"`, `url`, `headers`).
 *
 * A value of `env` or `headers` is either plain text or a reference to the host's secrets store, `{"secret": "NAME"}`:
 * references are what is stored and published, never the value (the session folder is the agent's).
 */

/** The name Pincer's own server has; a user server may not take it. */
export const RESERVED_MCP_SERVER_NAMES: readonly string[] = ['pincer'];

/**
 * Server names: tool names are `mcp__<server>__<tool>` (Claude, the built-in runtime) or `<server>_<tool>`
 * (OpenCode), so a name is short, starts with a letter and holds letters, digits, `-` and single `_`.
 */
const SERVER_NAME = /^[A-Za-z][A-Za-z0-9-]*(_[A-Za-z0-9-]+)*$/;
const MAX_SERVER_NAME = 32;

/** As the secrets store names them (`pincer secret set NAME`). */
export const SECRET_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
export const SecretRefSchema = z.strictObject({
  secret: z.string().regex(SECRET_NAME, { error: 'must be a secret name (letters, digits and _, not starting with a digit)' }),
});
export type SecretRef = z.infer<typeof SecretRefSchema>;

const ValueSchema = z.union([z.string(), SecretRefSchema]);
export type McpValue = z.infer<typeof ValueSchema>;

const EnvNameSchema = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, { error: 'must be the name of an environment variable' });
const HeaderNameSchema = z.string().regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/, { error: 'must be an HTTP header name' });

export const McpStdioSpecSchema = z.strictObject({
  type: z.literal('stdio').optional(),
  command: z.string().min(1, { error: 'command must not be empty' }),
  args: z.array(z.string()).optional(),
  env: z.record(EnvNameSchema, ValueSchema).optional(),
  /** working directory; relative to the agent's folder (`agent/` of the session) */
  cwd: z.string().min(1).optional(),
});

export const McpHttpSpecSchema = z.strictObject({
  type: z.literal('http'),
  url: z.url({ protocol: /^https?$/, error: 'url must be an http(s) URL' }),
  headers: z.record(HeaderNameSchema, ValueSchema).optional(),
});

export const McpServerSpecSchema = z.union([McpStdioSpecSchema, McpHttpSpecSchema], {
  error: 'an MCP server is {command, args?, env?, cwd?} (stdio) or {type: "http", url, headers?}',
});
export type McpServerSpec = z.infer<typeof McpServerSpecSchema>;
export type McpStdioSpec = z.infer<typeof McpStdioSpecSchema>;
export type McpHttpSpec = z.infer<typeof McpHttpSpecSchema>;

export const McpServerNameSchema = z
  .string()
  .max(MAX_SERVER_NAME, { error: `a server name has at most ${MAX_SERVER_NAME} characters` })
  .regex(SERVER_NAME, { error: 'a server name starts with a letter and has letters, digits, "-" and single "_"' })
  .refine((name) => !RESERVED_MCP_SERVER_NAMES.includes(name.toLowerCase()), {
    error: (issue) => `"${String(issue.input)}" is the name of Pincer's own server; choose another`,
  });

export const McpServersSchema = z.record(McpServerNameSchema, McpServerSpecSchema);
export type McpServers = z.infer<typeof McpServersSchema>;

/** Validate servers from outside (CLI, HTTP, a stored row): the servers, or one line saying what is wrong. */
export function parseMcpServers(value: unknown): { ok: true; servers: McpServers } | { ok: false; error: string } {
  // Names first, one by one: zod reports a bad record key only as "Invalid key in record".
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    for (const name of Object.keys(value)) {
      const named = parseMcpServerName(name);
      if (!named.ok) return { ok: false, error: `${name}: ${named.error}` };
    }
  }
  const parsed = McpServersSchema.safeParse(value);
  return parsed.success ? { ok: true, servers: parsed.data } : { ok: false, error: describeIssues(parsed.error) };
}

export function parseMcpServerName(name: string): { ok: true } | { ok: false; error: string } {
  const parsed = McpServerNameSchema.safeParse(name);
  return parsed.success ? { ok: true } : { ok: false, error: describeIssues(parsed.error) };
}

/** The secrets a server's values refer to, sorted. */
export function secretNamesOf(spec: McpServerSpec): string[] {
  const values = Object.values((spec.type === 'http' ? spec.headers : spec.env) ?? {});
  return [...new Set(values.flatMap((value) => (typeof value === 'string' ? [] : [value.secret])))].sort();
}

/** One line for lists: `stdio npx -y @modelcontextprotocol/server-memory (env: MEMORY_FILE_PATH)`. */
export function describeMcpServer(spec: McpServerSpec): string {
  if (spec.type === 'http') {
    const headers = Object.keys(spec.headers ?? {});
    return `http ${spec.url}${headers.length ? ` (headers: ${headers.join(', ')})` : ''}`;
  }
  const env = Object.keys(spec.env ?? {});
  const command = [spec.command, ...(spec.args ?? [])].map((part) => (/[\s"']/.test(part) ? JSON.stringify(part) : part)).join(' ');
  return `stdio ${command}${spec.cwd ? ` (cwd ${spec.cwd})` : ''}${env.length ? ` (env: ${env.join(', ')})` : ''}`;
}
