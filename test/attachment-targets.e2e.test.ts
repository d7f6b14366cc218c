import http from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { PROCESS_RUNNER, startHost, stopAllHosts } from './support/host-harness.js';
import { onPath } from './support/dockerd.js';
import { closeServer, listenOnLoopback } from './support/fake-http.js';
import { FIXTURES } from './support/media-fixtures.js';

/**
 * Attachment URLs through the real host and runner processes: by default a URL on this machine — as an address or as
 * a name that resolves to it (`localhost`, through the system resolver) — is refused with a note in the prompt and
 * the message is still answered; with PINCER_ATTACHMENT_ALLOW_HOSTS the same server is reached, and a redirect from
 * it to the cloud metadata address is still refused. A runner in a sandbox without a network says so, and what
 * gives it one.
 */
afterEach(async () => {
  expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
});

let server: http.Server;
let base: string;
const seen: string[] = [];
beforeAll(async () => {
  server = http.createServer((req, res) => {
    seen.push(req.url ?? '');
    if (req.url === '/to-metadata') {
      res.writeHead(302, { Location: 'http://169.254.169.254/latest/meta-data/iam/' });
      return res.end();
    }
    if (req.url === '/png') return res.end(FIXTURES.png);
    res.statusCode = 404;
    res.end();
  });
  base = await listenOnLoopback(server);
});
afterAll(() => closeServer(server));

async function send(env: Record<string, string>, conversation: string, urls: Record<string, string>): Promise<string> {
  seen.length = 0;
  const host = await startHost(env);
  const stream = host.stream(conversation);
  const attachments = Object.entries(urls).map(([name, url]) => ({ type: 'image', name, url }));
  const res = await host.request('POST', `/v1/conversations/${conversation}/messages`, { text: 'look at these', attachments });
  expect(res.status).toBe(202);
  const reply = await stream.waitFor('the reply', (e) => e.event === 'chat' || e.event === 'notice', 60_000);
  expect(reply.event).toBe('chat');
  stream.close();
  expect(await host.stop()).toBe(0);
  // (the prompt is XML: the note's quotes arrive escaped)
  return String(reply.data.text);
}

describe('attachment download targets through the host', () => {
  it('refuses loopback by default — by address and by a name resolving to it — and still answers the message', async () => {
    const port = new URL(base).port;
    const text = await send({}, 'ssrf', { 'a.png': `${base}/png`, 'b.png': `http://localhost:${port}/png` });
    expect(text).toContain('look at these');
    expect(text).toContain(
      '[attachment &quot;a.png&quot; not available: the download was refused: 127.0.0.1 is a loopback address; downloads from loopback, private and link-local addresses are refused unless PINCER_ATTACHMENT_ALLOW_HOSTS allows them]',
    );
    expect(text).toMatch(
      /\[attachment &quot;b\.png&quot; not available: the download was refused: localhost resolves to (127\.0\.0\.1|::1), a loopback address;/,
    );
    expect(seen).toEqual([]);
  });

  it('downloads from loopback when allowed, and refuses a redirect from there to the metadata address', async () => {
    // the fake file server is on the host's loopback, which a sandbox with its own network does not share
    const text = await send({ ...PROCESS_RUNNER, PINCER_ATTACHMENT_ALLOW_HOSTS: '127.0.0.1' }, 'allowed', {
      'a.png': `${base}/png`,
      'b.png': `${base}/to-metadata`,
    });
    expect(text).toMatch(/\[file available at: \S+\/downloads\/[^/]+\/a\.png\]/);
    expect(text).toContain('[attachment &quot;b.png&quot; not available: the download was refused: it redirected to 169.254.169.254, a link-local address;');
    expect(seen.sort()).toEqual(['/png', '/to-metadata']);
  });

  // (without bubblewrap there is no sandbox without a network to try)
  it.skipIf(!onPath('bwrap'))('says, from a sandbox without a network, that the runner has none and which setting gives it one', async () => {
    const text = await send({ PINCER_RUNNER: 'bwrap' }, 'offline', { 'a.png': 'http://192.0.2.1/a.png' });
    expect(text).toContain('look at these');
    expect(text).toMatch(
      /\[attachment &quot;a\.png&quot; not available: the download failed: [^\]]*; the runner&apos;s sandbox has no network \(PINCER_BWRAP_NETWORK=host gives it one; or send the file&apos;s bytes as data\)\]/,
    );
  });

  it('will not start with a malformed allowance, and says which entry', async () => {
    await expect(startHost({ PINCER_ATTACHMENT_ALLOW_HOSTS: '127.0.0.1, 10.0.0.0/40' })).rejects.toThrow(
      /PINCER_ATTACHMENT_ALLOW_HOSTS: "10\.0\.0\.0\/40" is not an address or CIDR range/,
    );
  });
});
