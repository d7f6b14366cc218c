import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startHost, stopAllHosts } from './support/host-harness.js';
import { largePng } from './support/media-fixtures.js';
import { runPipedChat } from './support/chat-process.js';

/**
 * Large inputs through the real host and its real runner processes (started with the runner's V8 flags): a batch
 * over the format worker threshold (256 KiB) and a native image over the attachment worker threshold (64 KiB) both go
 * through the runner's worker pools, which must start their workers whatever flags the runner process was given.
 */
afterEach(async () => {
  expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
});

const BIG_TEXT = `start ${'0123456789'.repeat(30_000)} end`;

describe('large inputs through the HTTP API', () => {
  it('answers a 300 KB message', async () => {
    const host = await startHost();
    const stream = host.stream('big');
    const res = await host.request('POST', '/v1/conversations/big/messages', { text: BIG_TEXT });
    expect(res.status).toBe(202);
    const reply = await stream.waitFor('the reply', (e) => e.event === 'chat' || e.event === 'notice', 60_000);
    expect(reply.event).toBe('chat');
    expect(String(reply.data.text)).toContain(BIG_TEXT);
    expect(host.stderr()).not.toMatch(/invalid execArgv|gave up/);
    stream.close();
    expect(await host.stop()).toBe(0);
  });

  it('answers a message with a 120 KB PNG sent as a native image', async () => {
    const host = await startHost({ MOCK_NATIVE_MEDIA: 'image' });
    const stream = host.stream('picture');
    const png = largePng(120 * 1024);
    expect(png.length).toBeGreaterThan(120 * 1024);
    const res = await host.request('POST', '/v1/conversations/picture/messages', {
      text: 'what is in this picture?',
      attachments: [{ type: 'image', name: 'photo.png', data: png.toString('base64') }],
    });
    expect(res.status).toBe(202);
    const reply = await stream.waitFor('the reply', (e) => e.event === 'chat' || e.event === 'notice', 60_000);
    expect(reply.event).toBe('chat');
    // The mock provider prints a native image block as [image]; the text names the saved file.
    expect(String(reply.data.text)).toContain('[image]');
    expect(String(reply.data.text)).toContain('image attached: photo.png');
    stream.close();
    expect(await host.stop()).toBe(0);
  });
});

describe('large inputs through pincer chat', () => {
  it('answers a 300 KB line piped into pincer chat --provider mock', async () => {
    const { code, stdout, stderr, cleanup } = await runPipedChat(['--provider', 'mock'], { PINCER_RETRY_BASE_MS: '50' }, `${BIG_TEXT}\n`, 80_000);
    cleanup();
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    expect(stdout).toContain('agent> echo: ');
    expect(stdout).toContain(BIG_TEXT);
    expect(stdout).not.toContain('pincer: ');
  }, 90_000);

  it('answers a 120 KB PNG attached with /attach, and names a file it cannot attach without losing the next line', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-attach-'));
    const file = path.join(dir, 'my photo.png');
    fs.writeFileSync(file, largePng(120 * 1024));
    const input = `/attach "${file}" what is in it?\n/attach ${path.join(dir, 'missing.png')}\nstill there?\n`;
    const chat = await runPipedChat(['--provider', 'mock'], { MOCK_NATIVE_MEDIA: 'image' }, input, 80_000);
    try {
      expect({ code: chat.code, stderr: chat.stderr }).toEqual({ code: 0, stderr: '' });
      expect(chat.stdout).toContain('pincer: sent my photo.png');
      expect(chat.stdout).toContain('image attached: my photo.png');
      expect(chat.stdout).toContain('[image]');
      expect(chat.stdout).toContain('what is in it?');
      expect(chat.stdout).toContain(`pincer: cannot attach ${path.join(dir, 'missing.png')}: no such file; nothing was sent`);
      expect(chat.stdout).toContain('still there?</message>');
      // the file was saved into the session's downloads, as a platform's attachment is
      const downloads = path.join(chat.home, 'sessions', 'chat', 'downloads');
      const [folder] = fs.readdirSync(downloads);
      expect(fs.readFileSync(path.join(downloads, folder!, 'my photo.png')).equals(fs.readFileSync(file))).toBe(true);
    } finally {
      chat.cleanup();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);
});
