import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { closeBrowsers, launchBrowser, NO_CHROMIUM } from './support/browser.js';
import { startHost, stopAllHosts, TEST_TOKEN, type HostHandle } from './support/host-harness.js';
import { runCli } from './support/runner-harness.js';

/**
 * The control page's MCP servers view in a real Chromium against a real `pincer host`: a group's servers as the CLI
 * set them, shown by the host's description, one added as JSON (a bad one refused with the host's reason, nothing
 * changed) and one removed, each change what `pincer mcp-server list` then shows. The page changes one server at a
 * time (POST, DELETE): a server someone else added after the page loaded stays.
 */
let browser: Browser;
beforeAll(async () => {
  if (!NO_CHROMIUM) browser = await launchBrowser();
});
afterAll(async () => {
  await closeBrowsers();
});
afterEach(async () => {
  expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
});

const MEMORY = path.resolve('node_modules/@modelcontextprotocol/server-memory/dist/index.js');
const list = async (home: string) => (await runCli(['mcp-server', 'list', '--home', home], { PATH: process.env.PATH, HOME: process.env.HOME })).stdout;

async function logIn(host: HostHandle): Promise<{ page: Page; errors: string[] }> {
  const context = await browser.newContext({ viewport: { width: 1200, height: 1000 } });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (err) => errors.push(err.message));
  await page.goto(`http://127.0.0.1:${host.port}/`);
  await page.getByLabel('Access token').fill(TEST_TOKEN);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('navigation', { name: 'Views' }).waitFor();
  return { page, errors };
}

describe.skipIf(NO_CHROMIUM)(`the web page's MCP servers${NO_CHROMIUM ? ` (skipped: ${NO_CHROMIUM})` : ''}`, { timeout: 120_000 }, () => {
  it("shows a group's servers, adds one as JSON (a bad one refused), removes one", async () => {
    const host = await startHost();
    expect(
      (await runCli(['mcp-server', 'add', 'main', 'memory', '--home', host.home, '--', 'node', MEMORY], { PATH: process.env.PATH, HOME: process.env.HOME }))
        .status,
    ).toBe(0);
    const { page, errors } = await logIn(host);
    await page.getByRole('navigation', { name: 'Views' }).getByRole('button', { name: 'MCP servers' }).click();
    const group = page.getByRole('article', { name: 'MCP servers of main' });
    await expect.poll(() => group.textContent()).toContain(`stdio node ${MEMORY}`);

    // a reserved name: the host's reason, nothing stored
    const form = page.getByRole('form', { name: 'Add an MCP server to main' });
    await form.getByLabel('Server name').fill('pincer');
    await form.getByLabel('Server JSON').fill('{"command": "node"}');
    await form.getByRole('button', { name: 'Add' }).click();
    await expect.poll(() => group.getByRole('alert').textContent()).toContain(`"pincer" is the name of Pincer's own server`);
    await form.getByLabel('Server JSON').fill('{"command": ');
    await form.getByLabel('Server name').fill('docs');
    await form.getByRole('button', { name: 'Add' }).click();
    await expect.poll(() => group.getByRole('alert').textContent()).toMatch(/^not JSON: /);
    expect(await list(host.home)).toBe(`main\tmemory\tstdio node ${MEMORY}\n`);

    // a name the group has: refused (409), the page says why
    await form.getByLabel('Server name').fill('memory');
    await form.getByLabel('Server JSON').fill('{"command": "node"}');
    await form.getByRole('button', { name: 'Add' }).click();
    await expect.poll(() => group.getByRole('alert').textContent()).toBe('agent group main already has an MCP server "memory" (remove it first)');

    // another admin adds a server while the page is open: the page's own change keeps it
    const cli = { PATH: process.env.PATH, HOME: process.env.HOME };
    expect((await runCli(['mcp-server', 'add', 'main', 'other', '--home', host.home, '--', 'node', 'other.js'], cli)).status).toBe(0);
    await form.getByLabel('Server name').fill('docs');
    await form.getByLabel('Server JSON').fill('{"type": "http", "url": "https://mcp.example.com/mcp", "headers": {"Authorization": {"secret": "DOCS_TOKEN"}}}');
    await form.getByRole('button', { name: 'Add' }).click();
    await expect.poll(() => group.textContent()).toContain('http https://mcp.example.com/mcp (headers: Authorization)');
    expect(await group.textContent()).toContain('stdio node other.js');
    expect(await list(host.home)).toBe(
      `main\tmemory\tstdio node ${MEMORY}\nmain\tother\tstdio node other.js\nmain\tdocs\thttp https://mcp.example.com/mcp (headers: Authorization)\n`,
    );

    await group.getByRole('button', { name: 'Remove memory' }).click();
    await expect.poll(() => group.textContent()).not.toContain('memory');
    expect(await list(host.home)).toBe('main\tother\tstdio node other.js\nmain\tdocs\thttp https://mcp.example.com/mcp (headers: Authorization)\n');

    // the routes the page uses: a scoped token is refused, an unknown name is 404 with what the group has
    const scoped = (await runCli(['token', 'create', 'bridge', '--conversation', 'ops', '--home', host.home], cli)).stdout.trim();
    for (const [method, route, body] of [
      ['POST', '/v1/groups/main/mcp-servers', { name: 'x', server: { command: 'node' } }],
      ['DELETE', '/v1/groups/main/mcp-servers/docs', undefined],
    ] as const) {
      const res = await fetch(`http://127.0.0.1:${host.port}${route}`, {
        method,
        headers: { Authorization: `Bearer ${scoped}`, 'Content-Type': 'application/json' },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
      expect(res.status).toBe(403);
    }
    const missing = await host.request('DELETE', '/v1/groups/main/mcp-servers/memory');
    expect(missing).toMatchObject({ status: 404, body: { error: 'agent group main has no MCP server "memory" (it has: other, docs)' } });
    expect(await list(host.home)).toBe('main\tother\tstdio node other.js\nmain\tdocs\thttp https://mcp.example.com/mcp (headers: Authorization)\n');
    expect(errors).toEqual([]);
    await page.context().close();
    await host.stop();
  });
});
