import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { claudeTestEnv, cleanUpClaudeRunsAfterEach, fakeAnthropic } from './support/claude.js';
import { startRunner } from './support/runner-harness.js';
import { createTestSession } from './support/session.js';
import { DIGEST, ENTITY, probeReport, sessionFilesWithSecret, withUserServers } from './support/user-mcp-servers.js';
import { waitFor } from './support/wait.js';

/**
 * Claude with a user's own stdio MCP servers, as the host publishes them (config.json `mcpServers`, the secret as a
 * reference whose value comes on the runner's stdin): the real runner and Claude Code against the fake Anthropic
 * server, the registry's memory server and the test's probe. Claude Code gets the servers over its stdin
 * (`mcpServersDelivery: initialize`), so the secret is on no command line and in no environment but the probe's.
 */
cleanUpClaudeRunsAfterEach();

describe("a user's stdio MCP servers in Claude", { timeout: 120_000 }, () => {
  it('Claude: calls mcp__memory__create_entities and mcp__probe__env_digest, and gets their results', async () => {
    const fake = await fakeAnthropic();
    const session = createTestSession('pincer-claude-user-mcp-');
    const { stdin, memoryFile } = withUserServers(session);
    fake.script(
      { toolUse: { name: 'mcp__memory__create_entities', input: ENTITY } },
      { toolUse: { name: 'mcp__probe__env_digest', input: { name: 'PROBE_TOKEN' } } },
      { text: 'remembered' },
    );
    const runner = startRunner(session.paths.root, { ...claudeTestEnv(fake), PINCER_STDIN_DOCUMENT: '1' }, { stdin });
    await runner.ready(30_000);
    const { id } = session.chat('remember Ada');
    await waitFor('completed', () => session.inbound(id).status === 'completed', { timeoutMs: 45_000 });
    const [first, second, third] = fake.modelRequests();
    expect(first!.toolNames).toEqual(expect.arrayContaining(['mcp__memory__create_entities', 'mcp__probe__env_digest']));
    expect(second!.lastUserText).toContain('drinks green tea');
    expect(probeReport(third!.lastUserText)).toEqual({ name: 'PROBE_TOKEN', set: true, sha256: DIGEST, parentEnviron: false, parentCmdline: false });
    expect(fs.readFileSync(memoryFile, 'utf8')).toContain('Ada');
    expect(sessionFilesWithSecret(session)).toEqual([]);
    expect(await runner.stop()).toBe(0);
  });
});
