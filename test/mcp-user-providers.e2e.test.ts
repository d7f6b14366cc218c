import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { startFakeOpenAI } from './support/fake-openai.js';
import { cleanUpProviderRunsAfterEach, providerSession, SLOW } from './support/openai-provider-e2e.js';
import { startRunner } from './support/runner-harness.js';
import { DIGEST, ENTITY, probeReport, sessionFilesWithSecret, withUserServers } from './support/user-mcp-servers.js';
import { waitFor } from './support/wait.js';

/**
 * Codex and OpenCode (Claude: mcp-user-claude.e2e.test.ts) with a user's own stdio MCP servers, as the host publishes them (config.json `mcpServers`, the
 * secret as a reference whose value comes on the runner's stdin): the real runner, the real Claude Code / Codex /
 * OpenCode binaries against the fake model servers, a registry server (`@modelcontextprotocol/server-memory`) and
 * the test's probe server. The model calls a tool of each and gets its result; the probe reports the secret's digest
 * and that the SDK process that started it has the value on no command line.
 */
cleanUpProviderRunsAfterEach();

describe("a user's stdio MCP servers in Codex and OpenCode", { timeout: 150_000 }, () => {
  it('Codex: calls the memory and probe tools (namespace mcp__<server>); the secret is on no command line', async () => {
    const fake = await startFakeOpenAI();
    fake.script(
      { tool: 'create_entities', server: 'memory', args: ENTITY },
      { tool: 'env_digest', server: 'probe', args: { name: 'PROBE_TOKEN' } },
      { text: 'remembered' },
    );
    const session = providerSession('pincer-codex-user-mcp-');
    const { stdin, memoryFile } = withUserServers(session);
    const env = {
      AGENT_PROVIDER: 'codex',
      OPENAI_BASE_URL: fake.baseUrl,
      OPENAI_API_KEY: 'test-key',
      CODEX_MODEL: 'fake-model',
      CODEX_MAX_RETRIES: '0',
      PINCER_STOP_GRACE_MS: '500',
      PINCER_STDIN_DOCUMENT: '1',
    };
    const runner = startRunner(session.paths.root, env, { stdin });
    await runner.ready();
    const { id } = session.chat('remember Ada');
    await waitFor('completed', () => session.inbound(id).status === 'completed', SLOW);
    const requests = fake.modelRequests().map((r) => JSON.stringify(r.body));
    expect(requests[1]).toContain('drinks green tea');
    // Codex passes the value on from its own environment (`env_vars`), kept out of the agent's shell commands.
    expect(probeReport(requests[2] ?? '')).toMatchObject({ name: 'PROBE_TOKEN', set: true, sha256: DIGEST, parentCmdline: false });
    expect(fs.readFileSync(memoryFile, 'utf8')).toContain('Ada');
    expect(sessionFilesWithSecret(session)).toEqual([]);
    expect(await runner.stop()).toBe(0);
  });

  it('OpenCode: calls memory_create_entities and probe_env_digest; a server with a secret is added over its API', async () => {
    const fake = await startFakeOpenAI();
    fake.script(
      { tool: 'create_entities', server: 'memory', args: ENTITY },
      { tool: 'env_digest', server: 'probe', args: { name: 'PROBE_TOKEN' } },
      { text: 'remembered' },
    );
    const session = providerSession('pincer-opencode-user-mcp-');
    const { stdin, memoryFile } = withUserServers(session);
    const env = {
      AGENT_PROVIDER: 'opencode',
      OPENCODE_BASE_URL: fake.baseUrl,
      OPENCODE_API_KEY: 'test-key',
      OPENCODE_MODEL: 'fake-model',
      PINCER_STOP_GRACE_MS: '500',
      PINCER_STDIN_DOCUMENT: '1',
    };
    const runner = startRunner(session.paths.root, env, { stdin });
    await runner.ready(30_000);
    const { id } = session.chat('remember Ada');
    await waitFor('completed', () => session.inbound(id).status === 'completed', { timeoutMs: 90_000 });
    const requests = fake.modelRequests().map((r) => JSON.stringify(r.body));
    expect(requests[0]).toContain('memory_create_entities');
    expect(requests[0]).toContain('probe_env_digest');
    expect(requests[1]).toContain('drinks green tea');
    // Not in OpenCode's environment (which its shell commands inherit): the server was added over its API.
    expect(probeReport(requests[2] ?? '')).toEqual({ name: 'PROBE_TOKEN', set: true, sha256: DIGEST, parentEnviron: false, parentCmdline: false });
    expect(fs.readFileSync(memoryFile, 'utf8')).toContain('Ada');
    expect(sessionFilesWithSecret(session)).toEqual([]);
    expect(await runner.stop()).toBe(0);
  });
});
