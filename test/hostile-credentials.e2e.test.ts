import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { runnerUnder } from '../src/container/bwrap.js';
import { onPath } from './support/dockerd.js';
import { claudeTestEnv, cleanupClaude, fakeAnthropic } from './support/claude.js';
import { closeServer, listenOnLoopback } from './support/fake-http.js';
import { startHost, stopAllHosts, TEST_TOKEN, type HostHandle } from './support/host-harness.js';
import { environOf } from './support/processes.js';
import { waitFor } from './support/wait.js';

/**
 * Credentials, attacked as a local user or an agent would (an attack on a real host, each shown to fail):
 * the bwrap command line (every local user reads /proc/<pid>/cmdline), the proxy on 127.0.0.1 called by another
 * user with a live placeholder, host variables the registry does not give runners, encoded slashes in the proxy's
 * path, and the host's own /proc/<pid>/environ and log.
 */
const noBwrap = onPath('bwrap') ? undefined : 'bubblewrap is not installed';
/** `setpriv` to `nobody` needs root; elsewhere the other-user attack cannot be made here. */
const noOtherUser = process.getuid?.() !== 0 ? 'not root: cannot act as another local user' : onPath('setpriv') ? undefined : 'setpriv is not installed';
if (noBwrap) console.warn(`[hostile] skipping the bwrap attacks: ${noBwrap}`);
if (noOtherUser) console.warn(`[hostile] skipping the other-user attack: ${noOtherUser}`);

const servers: http.Server[] = [];
afterEach(async () => {
  expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
  await Promise.all(servers.splice(0).map(closeServer));
  expect(await cleanupClaude()).toBe(0);
});

function proxyPort(host: HostHandle): number {
  const m = /credential proxy on 127\.0\.0\.1:(\d+)/.exec(host.stderr());
  if (!m) throw new Error(`no credential proxy in the host log:\n${host.stderr()}`);
  return Number(m[1]);
}

/** Every process under `pid` (its whole tree), from /proc. */
function tree(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {
      // gone
    }
  }
  const out: number[] = [];
  const walk = (p: number): void => {
    for (const c of children.get(p) ?? []) {
      out.push(c);
      walk(c);
    }
  };
  walk(pid);
  return out;
}

function cmdlineOf(pid: number): string {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'latin1').replaceAll('\0', ' ');
  } catch {
    return '';
  }
}

/** POST with the path exactly as written (fetch would resolve `%2e%2e` itself, as a careful client does). */
function rawPost(port: number, rawPath: string, key: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, path: rawPath, method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json' } },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on('error', reject);
    req.end('{}');
  });
}

/** curl as `nobody` (another local user); returns the HTTP status. */
function curlAsNobody(url: string, placeholder: string): string {
  const out = spawnSync(
    'setpriv',
    [
      '--reuid=nobody',
      '--regid=nogroup',
      '--clear-groups',
      'curl',
      '-s',
      '-o',
      '/dev/null',
      '-w',
      '%{http_code}',
      '-H',
      `x-api-key: ${placeholder}`,
      '-d',
      '{}',
      url,
    ],
    { encoding: 'utf8' },
  );
  return out.stdout.trim() || `(curl failed: ${out.stderr})`;
}

describe.skipIf(noBwrap !== undefined)('a bubblewrap runner holds its placeholder where no other user reads it', { timeout: 120_000 }, () => {
  it('nothing secret on any command line, no unlisted host variable inside, and the proxy refuses another user', async () => {
    const fake = await fakeAnthropic();
    fake.script({ text: 'done' });
    const realKey = `sk-ant-real-${randomBytes(10).toString('hex')}`;
    const adminKey = `sk-admin-${randomBytes(10).toString('hex')}`;
    const host = await startHost({
      ...claudeTestEnv(fake, { ANTHROPIC_API_KEY: realKey }),
      PINCER_RUNNER: 'bwrap',
      // host variables with a provider's prefix that no runner reads
      OPENAI_ADMIN_KEY: adminKey,
      ANTHROPIC_CUSTOM_HEADERS: `x-gateway-secret: ${adminKey}`,
      AWS_SECRET_ACCESS_KEY: adminKey,
      PINCER_BATCH_MAX_MESSAGES: '40', // a runner setting: passes
    });
    const stream = host.stream('c');
    expect((await host.request('POST', '/v1/conversations/c/messages', { text: 'hi' })).status).toBe(202);
    await stream.waitFor('the reply', (e) => e.event === 'chat' && e.data.text === 'done', 90_000);
    const [bwrapPid] = host.runnerPids();
    const runner = await waitFor('the sandboxed runner', () => runnerUnder(bwrapPid!));
    const env = environOf(runner);
    const placeholder = /ANTHROPIC_API_KEY=(pincer-placeholder-[A-Za-z0-9_-]+)/.exec(env)?.[1];
    expect(placeholder).toBeDefined();

    // (1) every process of the host's tree, the bwrap ones first: no placeholder, no proxy address, no variable
    const port = proxyPort(host);
    for (const pid of [host.child.pid!, ...tree(host.child.pid!)]) {
      const cmdline = cmdlineOf(pid);
      expect([pid, cmdline.includes('pincer-placeholder-')]).toEqual([pid, false]);
      expect([pid, cmdline.includes('--setenv')]).toEqual([pid, false]);
      expect([pid, cmdline.includes(`127.0.0.1:${port}`)]).toEqual([pid, false]);
      expect([pid, cmdline.includes(adminKey)]).toEqual([pid, false]);
    }
    // (2) the runner's environment is an allow-list
    expect(env).not.toContain(adminKey);
    expect(env).not.toContain('OPENAI_ADMIN_KEY');
    expect(env).not.toContain('ANTHROPIC_CUSTOM_HEADERS');
    expect(env).not.toContain('AWS_SECRET_ACCESS_KEY');
    expect(env).not.toContain(realKey);
    expect(env).toContain('PINCER_BATCH_MAX_MESSAGES=40');

    // (3) encoded slashes and dots that climb out of the upstream's base, with a live placeholder: refused
    for (const attack of [
      '/anthropic/..%2f..%2fadmin/keys',
      '/anthropic/%2e%2e%2fadmin/keys',
      '/anthropic/v1/%2e%2e/%2e%2e/admin',
      '/anthropic/..%5cadmin',
      '/anthropic/%252e%252e%252fadmin',
    ]) {
      expect([attack, await rawPost(port, attack, placeholder!)]).toEqual([attack, 400]);
    }
    expect(fake.requests.filter((r) => /admin/.test(r.path))).toEqual([]);

    // the placeholder is live: the host's own user gets through, with the real key put in
    const before = fake.requests.length;
    await fetch(`http://127.0.0.1:${port}/anthropic/v1/models`, { headers: { 'x-api-key': placeholder! } });
    expect(fake.requests.length).toBe(before + 1);
    expect(fake.requests.at(-1)!.headers['x-api-key']).toBe(realKey);

    // (1) another local user with that live placeholder: refused, nothing reaches the upstream
    if (!noOtherUser) {
      expect(curlAsNobody(`http://127.0.0.1:${port}/anthropic/v1/models`, placeholder!)).toBe('403');
      expect(fake.requests.length).toBe(before + 1);
      await waitFor('the refusal in the log', () => host.stderr().includes('refused a request from another local user'));
    }
    stream.close();
    expect(await host.stop()).toBe(0);
  });
});

describe("the host's own tokens", { timeout: 60_000 }, () => {
  it('are blank in its /proc/<pid>/environ and never in its log (Slack unreachable at start)', async () => {
    const metricsToken = `metrics-${randomBytes(12).toString('hex')}`;
    const slackToken = `xoxb-${randomBytes(12).toString('hex')}`;
    const signing = `signing-${randomBytes(12).toString('hex')}`;
    // a port nothing listens on: Slack's API cannot be reached
    const closed = http.createServer();
    const deadUrl = await listenOnLoopback(closed);
    await closeServer(closed);
    const host = await startHost({
      PINCER_METRICS_TOKEN: metricsToken,
      SLACK_BOT_TOKEN: slackToken,
      SLACK_SIGNING_SECRET: signing,
      SLACK_API_URL: `${deadUrl}/api/`,
      PINCER_LOG_LEVEL: 'debug',
    });
    const environ = await waitFor('the host to blank its tokens', () => {
      const e = environOf(host.child.pid!);
      return e.includes(TEST_TOKEN) || e.includes(metricsToken) || e.includes(slackToken) || e.includes(signing) ? undefined : e;
    });
    expect(environ).toContain('PINCER_HTTP_TOKEN=x'); // the name stays, its value is blanked
    // the tokens still work in the process
    expect((await host.request('GET', '/v1/sessions')).status).toBe(200);
    const metrics = await fetch(`http://127.0.0.1:${host.port}/metrics`, { headers: { Authorization: `Bearer ${metricsToken}` } });
    expect(metrics.status).toBe(200);
    await waitFor('Slack to have been tried', () => /slack/i.test(host.stderr()) && /ECONNREFUSED|could not connect|fetch failed|error/i.test(host.stderr()));
    expect(await host.stop()).toBe(0);
    for (const secret of [slackToken, signing, metricsToken, TEST_TOKEN]) expect(host.stderr()).not.toContain(secret);
  });
});
