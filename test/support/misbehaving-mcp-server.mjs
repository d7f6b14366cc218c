// A small MCP server (the official SDK over stdio) that misbehaves on purpose, for the tests of how Pincer's clients
// cope. MISBEHAVE=crash-at-start exits before it answers; MISBEHAVE=hang-at-start never answers; otherwise it serves
// tools that hang, return too much, return each content type, or drop the connection mid-call.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

const mode = process.env.MISBEHAVE ?? 'serve';
if (mode === 'crash-at-start') {
  process.stderr.write('misbehaving: cannot open /nonexistent/state.db\nsecond line\n');
  process.exit(3);
}
if (mode === 'hang-at-start') {
  process.stderr.write('misbehaving: waiting for a lock that never comes\n');
  setInterval(() => undefined, 60_000);
} else {
  const server = new McpServer({ name: 'misbehaving', version: '1.0.0' });
  let calls = 0;
  const text = (value) => ({ content: [{ type: 'text', text: value }] });
  const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=';

  server.registerTool('echo', { description: 'echo the text', inputSchema: { text: z.string() } }, ({ text: value }) => {
    calls += 1;
    return text(`echo: ${value} (pid ${process.pid}, call ${calls})`);
  });
  // Where a secret went, without saying it: its digest, and whether the process that started us has it too.
  server.registerTool('env_digest', { description: "a variable's sha256 and whether the parent process has its value", inputSchema: { name: z.string() } }, ({ name }) => {
    const value = process.env[name];
    if (!value) return text(JSON.stringify({ name, set: false }));
    const has = (file) => {
      try {
        return fs.readFileSync(file).includes(value);
      } catch (err) {
        return `unreadable (${err.code})`;
      }
    };
    const parent = process.ppid;
    return text(JSON.stringify({ name, set: true, sha256: createHash('sha256').update(value).digest('hex'), parentEnviron: has(`/proc/${parent}/environ`), parentCmdline: has(`/proc/${parent}/cmdline`) }));
  });
  server.registerTool('read_file', { description: 'read a file', inputSchema: { path: z.string() } }, ({ path }) => {
    try {
      return text(fs.readFileSync(path, 'utf8').slice(0, 200));
    } catch (err) {
      return text(`cannot read ${path}: ${err.code}`);
    }
  });
  server.registerTool('where', { description: 'cwd and what the server sees', inputSchema: {} }, () =>
    text(JSON.stringify({ cwd: process.cwd(), workspace: process.env.PINCER_WORKSPACE ?? null, sessionDb: fs.existsSync('/workspace/session.db') })),
  );
  server.registerTool('hang', { description: 'never answers', inputSchema: {} }, () => new Promise(() => undefined));
  server.registerTool('big', { description: 'returns a text of `bytes` bytes', inputSchema: { bytes: z.number().int() } }, ({ bytes }) => text('x'.repeat(bytes)));
  server.registerTool('contents', { description: 'returns one block of each content type', inputSchema: {} }, () => ({
    content: [
      { type: 'text', text: 'plain text' },
      { type: 'image', data: PNG, mimeType: 'image/png' },
      { type: 'image', data: Buffer.alloc(6 * 1024 * 1024, 1).toString('base64'), mimeType: 'image/png' },
      { type: 'audio', data: Buffer.alloc(3000).toString('base64'), mimeType: 'audio/wav' },
      { type: 'resource', resource: { uri: 'file:///notes/today.md', mimeType: 'text/markdown', text: '# Today\nbuy milk' } },
      { type: 'resource', resource: { uri: 'file:///data.bin', mimeType: 'application/octet-stream', blob: Buffer.alloc(2048).toString('base64') } },
      { type: 'resource_link', uri: 'https://example.invalid/report.pdf', name: 'report', mimeType: 'application/pdf', description: 'the monthly report' },
    ],
  }));
  server.registerTool(
    'structured',
    { description: 'structured content only', inputSchema: {}, outputSchema: { temperature: z.number(), unit: z.string() } },
    () => ({ content: [], structuredContent: { temperature: 21.5, unit: 'C' } }),
  );
  server.registerTool('drop', { description: 'exits in the middle of the call', inputSchema: {} }, () => {
    process.stderr.write('misbehaving: dropping the connection\n');
    setTimeout(() => process.exit(1), 10);
    return new Promise(() => undefined);
  });
  await server.connect(new StdioServerTransport());
  process.stderr.write(`misbehaving: serving (pid ${process.pid})\n`);
}
