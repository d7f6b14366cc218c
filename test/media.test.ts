import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Attachment } from '../src/db/content.js';
import { parseAllowHosts } from '../src/runner/media/download-targets.js';
import { safeFileName } from '../src/runner/media/names.js';
import { prepareAttachments } from '../src/runner/media/prepare.js';
import { FIXTURES } from './support/media-fixtures.js';
import { cleanupSessions, createTestSession } from './support/session.js';

afterEach(() => cleanupSessions());

let server: http.Server;
let base: string;
let closedPort: number;
const sockets = new Set<import('node:net').Socket>();
beforeAll(async () => {
  server = http.createServer((req, res) => {
    if (req.url === '/png') return res.end(FIXTURES.png);
    if (req.url === '/stall') return; // never answers
    res.statusCode = 404;
    res.end('no');
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const probe = http.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  closedPort = (probe.address() as AddressInfo).port;
  await new Promise((resolve) => probe.close(resolve));
});
afterAll(async () => {
  for (const socket of sockets) socket.destroy();
  await new Promise((resolve) => server.close(resolve));
});

const att = (name: string, source: Partial<Attachment>): Attachment => ({ type: 'file', name, ...source });
const claudeLike = ['image', 'pdf'] as const;

/** The test server is on loopback, which downloads may only reach when the setting allows it. */
function options(root: string, nativeMedia: readonly ('image' | 'pdf')[] = [], downloadTimeoutMs = 2000) {
  return { root, nativeMedia, downloadTimeoutMs, allowHosts: parseAllowHosts('127.0.0.1') };
}

describe('inbound attachments', () => {
  it.each([
    ['png', 'image', true],
    ['jpg', 'image', true],
    ['gif', 'image', true],
    ['webp', 'image', true],
    ['pdf', 'pdf', true],
    ['wav', 'audio', false],
    ['mp4', 'video', false],
    ['zip', 'file', false],
    ['csv', 'file', false],
  ] as const)('%s is detected as %s; native block for a Claude-like provider: %s', async (fixture, kind, native) => {
    const s = createTestSession();
    const data = FIXTURES[fixture].toString('base64');
    const claude = await prepareAttachments('m1', [att(`x.${fixture}`, { data })], options(s.paths.root, claudeLike));
    expect(claude.saved[0]).toMatchObject({ ok: true, kind, native });
    expect(claude.blocks).toHaveLength(native ? 1 : 0);
    const saved = claude.saved[0]!;
    if (saved.ok) {
      expect(saved.path).toBe(path.join(s.paths.downloads, 'm1', `x.${fixture}`));
      expect(fs.readFileSync(saved.path)).toEqual(FIXTURES[fixture]);
    }
    // Codex / OpenCode: everything is a file reference.
    const other = await prepareAttachments('m2', [att(`x.${fixture}`, { data })], options(s.paths.root));
    expect(other.blocks).toHaveLength(0);
    expect(other.notes[0]).toBe(`[file available at: ${path.join(s.paths.downloads, 'm2', `x.${fixture}`)}]`);
  });

  it('builds image and document blocks in the provider-neutral shape', async () => {
    const s = createTestSession();
    const media = await prepareAttachments(
      'm',
      [att('a.png', { data: FIXTURES.png.toString('base64') }), att('b.pdf', { data: FIXTURES.pdf.toString('base64') })],
      options(s.paths.root, claudeLike),
    );
    expect(media.blocks).toEqual([
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: FIXTURES.png.toString('base64') } },
      { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: FIXTURES.pdf.toString('base64') } },
    ]);
  });

  it('takes the type from the bytes, not the name (wrong extension fixed)', async () => {
    const s = createTestSession();
    const media = await prepareAttachments('m', [att('report.pdf', { data: FIXTURES.png.toString('base64') })], options(s.paths.root, claudeLike));
    expect(media.saved[0]).toMatchObject({ ok: true, name: 'report.png', kind: 'image', mime: 'image/png' });
  });

  it('downloads from an http url, and a localPath inside the session', async () => {
    const s = createTestSession();
    fs.writeFileSync(path.join(s.paths.root, 'in.csv'), FIXTURES.csv);
    const media = await prepareAttachments('m', [att('a.png', { url: `${base}/png` }), att('b.csv', { localPath: 'in.csv' })], options(s.paths.root));
    expect(media.saved.map((a) => a.ok)).toEqual([true, true]);
    expect(fs.readFileSync(path.join(s.paths.downloads, 'm', 'a.png'))).toEqual(FIXTURES.png);
  });

  it.each([
    ['an unreachable url', () => ({ url: `http://127.0.0.1:${closedPort}/x` }), /the download failed: .*ECONNREFUSED/],
    ['a url that never answers', () => ({ url: `${base}/stall` }), /the download timed out after 300 ms/],
    ['an HTTP error', () => ({ url: `${base}/missing` }), /HTTP 404/],
    ['a non-http url', () => ({ url: 'file:///etc/passwd' }), /scheme file: is not http or https/],
    ['a localPath outside the session', () => ({ localPath: '../../../../etc/passwd' }), /outside the session folder/],
    ['invalid base64', () => ({ data: '@@not base64@@' }), /not valid base64/],
    ['no source at all', () => ({}), /no data, url or localPath/],
  ])('refuses %s with a note in the prompt', async (_name, source, reason) => {
    const s = createTestSession();
    const media = await prepareAttachments('m', [att('f.bin', source())], options(s.paths.root, [], 300));
    expect(media.saved[0]!.ok).toBe(false);
    expect(media.notes[0]).toMatch(/^\[attachment "f\.bin" not available: /);
    expect(media.notes[0]).toMatch(reason);
  });

  it('refuses a localPath that escapes through a symlink', async () => {
    const s = createTestSession();
    fs.symlinkSync('/etc', path.join(s.paths.root, 'escape'));
    const media = await prepareAttachments('m', [att('p', { localPath: 'escape/hostname' })], options(s.paths.root));
    expect(media.notes[0]).toMatch(/outside the session folder|does not exist/);
    expect(fs.existsSync(path.join(s.paths.downloads, 'm'))).toBe(false);
  });

  it('does not save a file over the size limit of its type, and says so', async () => {
    const s = createTestSession();
    const big = Buffer.concat([FIXTURES.png, Buffer.alloc(21 * 1024 * 1024)]);
    const media = await prepareAttachments('m', [att('big.png', { data: big.toString('base64') })], options(s.paths.root, claudeLike));
    expect(media.notes[0]).toMatch(/not available: 21\.0 MB is over the 20\.0 MB limit for image files/);
    expect(fs.existsSync(path.join(s.paths.downloads, 'm'))).toBe(false);
  });

  it('keeps colliding names apart', async () => {
    const s = createTestSession();
    const data = FIXTURES.csv.toString('base64');
    const media = await prepareAttachments('m', [att('a.csv', { data }), att('a.csv', { data }), att('a.csv', { data })], options(s.paths.root));
    expect(media.saved.map((a) => a.ok && a.name)).toEqual(['a.csv', 'a-2.csv', 'a-3.csv']);
  });

  it('stores hostile names and message ids inside downloads/', async () => {
    const s = createTestSession();
    const data = FIXTURES.csv.toString('base64');
    const names = ['../../etc/passwd', 'con', 'x'.repeat(300) + '.csv', 'a\u0000b\nc.csv', '..', ''];
    const media = await prepareAttachments(
      '../../escape',
      names.map((n) => att(n, { data })),
      options(s.paths.root),
    );
    for (const saved of media.saved) {
      expect(saved.ok).toBe(true);
      if (!saved.ok) continue;
      expect(path.dirname(path.dirname(saved.path))).toBe(s.paths.downloads);
      expect(Buffer.byteLength(saved.name)).toBeLessThanOrEqual(120);
    }
    expect(fs.existsSync(path.join(s.paths.root, '..', 'escape'))).toBe(false);
  });
});

describe('safeFileName', () => {
  it.each([
    ['../../etc/passwd', '_._etc_passwd'],
    ['con', '_con'],
    ['LPT1.txt', '_LPT1.txt'],
    ['a\u0000b\nc.txt', 'abc.txt'],
    ['..', 'file'],
    ['  spaced.txt  ', 'spaced.txt'],
    ['résumé.pdf', 'résumé.pdf'],
  ])('%j → %j', (raw, safe) => {
    expect(safeFileName(raw)).toBe(safe);
  });

  it('cuts long names to 120 bytes and keeps the extension', () => {
    const name = safeFileName('é'.repeat(300) + '.txt');
    expect(Buffer.byteLength(name)).toBeLessThanOrEqual(120);
    expect(name.endsWith('.txt')).toBe(true);
  });
});
