import http from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Attachment } from '../src/db/content.js';
import { parseAllowHosts, PUBLIC_ONLY, refusedAddress, type DownloadAllowList, type ResolveHost } from '../src/runner/media/download-targets.js';
import { prepareAttachments } from '../src/runner/media/prepare.js';
import { closeServer, listenOnLoopback } from './support/fake-http.js';
import { FIXTURES } from './support/media-fixtures.js';
import { cleanupSessions, createTestSession } from './support/session.js';

/**
 * Where attachment downloads may connect (SSRF): loopback, private, link-local, unspecified and shared addresses are
 * refused unless allowed — for literal addresses, for names that resolve to them (checked on the address the socket
 * connects to), and on every redirect hop. Names resolve through an injected resolver, so a "public" name can point
 * at this machine without touching /etc/hosts or a DNS server.
 */
afterEach(() => cleanupSessions());

let server: http.Server;
let port: number;
const seen: string[] = [];
beforeAll(async () => {
  server = http.createServer((req, res) => {
    seen.push(req.url ?? '');
    const location = REDIRECTS[req.url ?? ''];
    if (location) {
      res.writeHead(302, { Location: location.replace('PORT', String(port)) });
      return res.end();
    }
    if (req.url === '/png') return res.end(FIXTURES.png);
    res.statusCode = 404;
    res.end('no');
  });
  port = Number(new URL(await listenOnLoopback(server)).port);
});
afterAll(() => closeServer(server));

const REDIRECTS: Record<string, string> = {
  '/moved': '/png',
  '/to-metadata': 'http://169.254.169.254/latest/meta-data/',
  '/to-rebound-name': 'http://rebound.example:PORT/png',
  '/to-file': 'file:///etc/passwd',
  '/loop': '/loop',
};

/** A resolver where two public-looking names point at this machine. */
const resolveHost: ResolveHost = async (hostname) => {
  if (hostname === 'files.example' || hostname === 'rebound.example') return [{ address: '127.0.0.1', family: 4 }];
  throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
};

async function download(url: string, allowHosts: DownloadAllowList) {
  seen.length = 0;
  const s = createTestSession();
  const media = await prepareAttachments('m', [{ type: 'image', name: 'a.png', url } satisfies Attachment], {
    root: s.paths.root,
    nativeMedia: [],
    downloadTimeoutMs: 5000,
    allowHosts,
    resolveHost,
  });
  return { saved: media.saved[0]!, note: media.notes[0]!, requests: [...seen] };
}

describe('which addresses a download may reach', () => {
  it.each([
    ['127.0.0.1', 'a loopback address'],
    ['127.255.0.9', 'a loopback address'],
    ['::1', 'a loopback address'],
    ['10.1.2.3', 'a private address'],
    ['172.16.0.1', 'a private address'],
    ['172.31.255.255', 'a private address'],
    ['192.168.1.1', 'a private address'],
    ['fd12:3456::1', 'a private address'],
    ['169.254.169.254', 'a link-local address'],
    ['fe80::1', 'a link-local address'],
    ['0.0.0.0', 'an unspecified address'],
    ['::', 'an unspecified address'],
    ['100.64.0.1', 'a shared (carrier-grade NAT) address'],
    ['::ffff:127.0.0.1', 'a loopback address'],
    ['::ffff:a9fe:a9fe', 'a link-local address'],
    ['::ffff:10.0.0.1', 'a private address'],
    ['64:ff9b::a00:5', 'a private address through NAT64 (10.0.0.5)'],
    ['64:ff9b::7f00:1', 'a loopback address through NAT64 (127.0.0.1)'],
    ['64:ff9b::a9fe:a9fe', 'a link-local address through NAT64 (169.254.169.254)'],
    ['64:ff9b::', 'an unspecified address through NAT64 (0.0.0.0)'],
    ['2002:a00:5::1', 'a private address through 6to4 (10.0.0.5)'],
    ['2002:7f00:1::', 'a loopback address through 6to4 (127.0.0.1)'],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'a Teredo tunnel address'],
    ['224.0.0.251', 'a multicast or broadcast address'],
    ['255.255.255.255', 'a multicast or broadcast address'],
    ['ff02::1', 'a multicast or broadcast address'],
    ['fec0::1', 'a private address'],
    ['192.0.0.170', 'a reserved address'],
    ['198.18.0.1', 'a reserved address'],
    ['198.19.255.254', 'a reserved address'],
    ['240.0.0.1', 'a reserved address'],
    ['::ffff:198.18.0.1', 'a reserved address'],
  ])('%s is refused as %s', (address, kind) => {
    expect(refusedAddress(address, PUBLIC_ONLY)).toBe(kind);
  });

  it.each([['8.8.8.8'], ['172.32.0.1'], ['100.128.0.1'], ['192.169.0.1'], ['2606:4700::1111'], ['::ffff:8.8.8.8'], ['64:ff9b::808:808'], ['2002:808:808::1']])(
    '%s is public',
    (address) => {
      expect(refusedAddress(address, PUBLIC_ONLY)).toBeUndefined();
    },
  );

  it('allows what PINCER_ATTACHMENT_ALLOW_HOSTS names: addresses, CIDR ranges, or everything', () => {
    const allow = parseAllowHosts(' 127.0.0.1, 10.0.0.0/8 ,fd00::/8, [::1], files.example ');
    expect(refusedAddress('127.0.0.1', allow)).toBeUndefined();
    expect(refusedAddress('127.0.0.2', allow)).toBe('a loopback address');
    expect(refusedAddress('10.200.0.1', allow)).toBeUndefined();
    expect(refusedAddress('fd00::1', allow)).toBeUndefined();
    expect(refusedAddress('::1', allow)).toBeUndefined();
    expect(refusedAddress('192.168.0.1', allow)).toBe('a private address');
    expect(allow.names.has('files.example')).toBe(true);
    expect(refusedAddress('169.254.169.254', parseAllowHosts('*'))).toBeUndefined();
  });

  it.each([['10.0.0.0/33'], ['10.0.0.0/8/1'], ['10.0.0.0/x'], ['http://files.example'], ['files.example:8080'], ['*.example']])(
    'refuses the setting %j with a line naming it',
    (value) => {
      expect(() => parseAllowHosts(value)).toThrow(new RegExp(`^PINCER_ATTACHMENT_ALLOW_HOSTS: "${value.replace(/[.*/]/g, '\\$&')}" is not`));
    },
  );
});

describe('attachment downloads', () => {
  it.each([['127.0.0.1'], ['[::ffff:127.0.0.1]'], ['[::ffff:7f00:1]']])('refuses loopback written as %s by default, without connecting', async (host) => {
    const { saved, note, requests } = await download(`http://${host}:${port}/png`, PUBLIC_ONLY);
    expect(saved.ok).toBe(false);
    const address = host === '127.0.0.1' ? host : '::ffff:7f00:1'; // the URL parser's spelling
    expect(note).toBe(
      `[attachment "a.png" not available: the download was refused: ${address} is a loopback address; ` +
        'downloads from loopback, private and link-local addresses are refused unless PINCER_ATTACHMENT_ALLOW_HOSTS allows them]',
    );
    expect(requests).toEqual([]);
  });

  it('refuses a public-looking name that resolves to 127.0.0.1, checked on the address it would connect to', async () => {
    const { note, requests } = await download(`http://files.example:${port}/png`, PUBLIC_ONLY);
    expect(note).toMatch(/not available: the download was refused: files\.example resolves to 127\.0\.0\.1, a loopback address; downloads from/);
    expect(requests).toEqual([]);
  });

  it('downloads from loopback when the setting allows its address or its name', async () => {
    const byAddress = await download(`http://files.example:${port}/png`, parseAllowHosts('127.0.0.0/8'));
    expect(byAddress.saved).toMatchObject({ ok: true, kind: 'image', size: FIXTURES.png.length });
    expect(byAddress.requests).toEqual(['/png']);
    const byName = await download(`http://files.example:${port}/png`, parseAllowHosts('files.example'));
    expect(byName.saved).toMatchObject({ ok: true, kind: 'image' });
    const everything = await download(`http://127.0.0.1:${port}/png`, parseAllowHosts('*'));
    expect(everything.saved).toMatchObject({ ok: true, kind: 'image' });
  });

  it('follows a redirect to an allowed place', async () => {
    const { saved, requests } = await download(`http://127.0.0.1:${port}/moved`, parseAllowHosts('127.0.0.1'));
    expect(saved).toMatchObject({ ok: true, kind: 'image' });
    expect(requests).toEqual(['/moved', '/png']);
  });

  it('refuses a redirect from an allowed server to the cloud metadata address', async () => {
    const { saved, note, requests } = await download(`http://127.0.0.1:${port}/to-metadata`, parseAllowHosts('127.0.0.1'));
    expect(saved.ok).toBe(false);
    expect(note).toMatch(/the download was refused: it redirected to 169\.254\.169\.254, a link-local address; downloads from/);
    expect(requests).toEqual(['/to-metadata']);
  });

  it('refuses a redirect to a name that resolves to a refused address (the allowance was for the first name only)', async () => {
    const { note, requests } = await download(`http://files.example:${port}/to-rebound-name`, parseAllowHosts('files.example'));
    expect(note).toMatch(/refused: it redirected to rebound\.example, which resolves to 127\.0\.0\.1, a loopback address;/);
    expect(requests).toEqual(['/to-rebound-name']);
  });

  it('refuses a redirect to another scheme, and a redirect loop after 5 hops', async () => {
    const toFile = await download(`http://127.0.0.1:${port}/to-file`, parseAllowHosts('127.0.0.1'));
    expect(toFile.note).toMatch(/not available: it redirected to a file: url\]$/);
    const loop = await download(`http://127.0.0.1:${port}/loop`, parseAllowHosts('127.0.0.1'));
    expect(loop.note).toMatch(/not available: it redirected more than 5 times\]$/);
    expect(loop.requests).toHaveLength(6);
  });
});
