import { describe, expect, it } from 'vitest';
import { checkMcpServers } from '../src/doctor/mcp-servers.js';

/** `pincer doctor` on an agent group's own MCP servers: what would keep each from starting, nothing started. */
describe("doctor's check of a group's MCP servers", () => {
  const env = { PATH: process.env.PATH };
  it('finds a missing secret, a command not on PATH, and nothing wrong with a good server', () => {
    const checks = checkMcpServers(
      {
        good: { command: 'node', args: ['server.js'] },
        nokey: { command: 'node', env: { TOKEN: { secret: 'GITHUB_TOKEN' } } },
        nocommand: { command: 'no-such-mcp-server-binary' },
        web: { type: 'http', url: 'http://127.0.0.1:9/mcp', headers: { Authorization: { secret: 'SET_ONE' } } },
      },
      ['SET_ONE'],
      env,
    );
    expect(checks).toEqual([
      { name: 'good', what: 'stdio node server.js', problems: [] },
      { name: 'nokey', what: 'stdio node (env: TOKEN)', problems: ['no secret named "GITHUB_TOKEN" in the host\'s secrets store (pincer secret set GITHUB_TOKEN)'] },
      { name: 'nocommand', what: 'stdio no-such-mcp-server-binary', problems: ['command "no-such-mcp-server-binary" not found on PATH'] },
      { name: 'web', what: 'http http://127.0.0.1:9/mcp (headers: Authorization)', problems: [] },
    ]);
  });

  it('says why when the secrets store cannot be read', () => {
    const [check] = checkMcpServers({ gh: { command: 'node', env: { T: { secret: 'GH' } } } }, { error: 'secrets file x has mode 0644' }, env);
    expect(check!.problems).toEqual(['its secrets cannot be read: secrets file x has mode 0644']);
  });
});
