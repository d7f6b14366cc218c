import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { mcpSecretValues } from '../src/host/mcp-servers.js';
import { SecretsStore } from '../src/host/secrets.js';
import { readStdinDocument } from '../src/runner/stdin-document.js';
import { createLogger } from '../src/shared/log.js';

/** How a runner gets its MCP servers' secrets: one line on stdin from its launcher, then the pipe is its lifeline. */
describe('the launch document on stdin', () => {
  it('is the first line; what follows stays for the lifeline', async () => {
    const input = new PassThrough();
    const reading = readStdinDocument(input);
    input.write('{"secrets":{"GITHUB_TOKEN":"ghp_');
    input.write('x"}}\nmore');
    expect(await reading).toEqual({ secrets: { GITHUB_TOKEN: 'ghp_x' } });
    const rest: string[] = [];
    input.on('data', (chunk: Buffer) => rest.push(chunk.toString())).resume(); // as the lifeline does
    input.end();
    await new Promise((resolve) => input.once('end', resolve));
    expect(rest.join('')).toBe('more');
  });

  it.each([
    ['not JSON', '{"secrets": {"A": "hunter2"\n', 'the launch document on stdin is not valid JSON'],
    ['the wrong shape', '{"secrets": {"A": 1}, "x": 2}\n', 'invalid launch document on stdin'],
  ])('refuses %s with one line that never quotes a value', async (_what, line, message) => {
    const input = new PassThrough();
    const reading = readStdinDocument(input);
    input.write(line);
    const err = await reading.catch((e: unknown) => e as Error);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toContain(message);
    expect((err as Error).message).not.toContain('hunter2');
  });

  it('fails when stdin closes first, or nothing comes in time', async () => {
    const closed = new PassThrough();
    const reading = readStdinDocument(closed);
    closed.end('{"secr');
    await expect(reading).rejects.toThrow('stdin closed before the launch document arrived');
    await expect(readStdinDocument(new PassThrough(), 50)).rejects.toThrow('no launch document on stdin within 50 ms');
  });
});

describe("the host's values for a configuration's secret references", () => {
  const log = createLogger('test');
  it('gives only the referenced secrets that are set', () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-secrets-'));
    const store = new SecretsStore(home);
    store.set('GITHUB_TOKEN', 'ghp_1');
    store.set('UNRELATED', 'other');
    const config = {
      mcpServers: {
        github: { command: 'gh-mcp', env: { GITHUB_TOKEN: { secret: 'GITHUB_TOKEN' }, MODE: 'read' } },
        docs: { type: 'http' as const, url: 'http://127.0.0.1:9/mcp', headers: { Authorization: { secret: 'DOCS_TOKEN' } } },
      },
    };
    expect(mcpSecretValues(config, store, log)).toEqual({ GITHUB_TOKEN: 'ghp_1' });
    expect(mcpSecretValues({}, store, log)).toEqual({});
  });

  it('gives nothing (and the session goes on) when the secrets file is refused', () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-secrets-'));
    fs.writeFileSync(path.join(home, 'secrets.json'), '{"GITHUB_TOKEN": "ghp_1"}', { mode: 0o644 });
    const config = { mcpServers: { github: { command: 'gh-mcp', env: { GITHUB_TOKEN: { secret: 'GITHUB_TOKEN' } } } } };
    expect(mcpSecretValues(config, new SecretsStore(home), log)).toEqual({});
  });
});
