import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeTelegram, type FakeTelegram, type TelegramCall } from './support/fake-telegram.js';
import { stopAllHosts, TEST_RUNNER } from './support/host-harness.js';
import { startPlatformHost } from './support/platform-host.js';
import { BUILT_CLI } from './support/runner-harness.js';
import { mountTmpfs, tmpfsSkip, type Tmpfs } from './support/tmpfs.js';
import { waitFor } from './support/wait.js';

/**
 * A message that meets a full disk is refused with a reason in every channel, never met with silence: the HTTP API's
 * 507 is in disk-full.e2e.test.ts; here the terminal chat prints why, and a platform's sender gets a notice in the
 * same thread. Once space returns, the next message is answered.
 */
const NOTICE = "Your message was not stored: the host's disk is full. Please send it again later.";
let fsMount: Tmpfs | undefined;
let telegram: FakeTelegram | undefined;
afterEach(async () => {
  expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
  await telegram?.close();
  telegram = undefined;
  fsMount?.unmount();
  fsMount = undefined;
});

describe.skipIf(tmpfsSkip !== undefined)(`a full disk in the chats${tmpfsSkip ? ` (skipped: ${tmpfsSkip})` : ''}`, () => {
  it('the terminal chat says the message was not stored because the disk is full', async () => {
    fsMount = mountTmpfs(24);
    const chat = spawn(process.execPath, [BUILT_CLI, 'chat'], {
      env: { PATH: process.env.PATH, HOME: process.env.HOME, PINCER_HOME: fsMount.dir, TZ: 'UTC', PINCER_RUNNER: TEST_RUNNER, AGENT_PROVIDER: 'mock' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    chat.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
    chat.stderr.setEncoding('utf8').on('data', (c: string) => (out += c));
    const exited = new Promise<number | null>((resolve) => chat.once('exit', (code) => resolve(code)));
    try {
      chat.stdin.write('before the disk filled\n');
      await waitFor('the first answer', () => out.includes('agent> echo:'), { timeoutMs: 60_000 });
      const filler = fsMount.fill();
      chat.stdin.write(`while it is full ${'x'.repeat(300_000)}\n`);
      await waitFor('the refusal', () => out.includes(`pincer: ${NOTICE}`), { timeoutMs: 30_000 });
      fs.rmSync(filler);
      chat.stdin.write('after space returned\n');
      await waitFor('the answer after', () => out.includes('after space returned'), { timeoutMs: 60_000 });
      chat.stdin.end();
      expect(await exited).toBe(0);
    } finally {
      chat.kill('SIGKILL');
    }
  }, 180_000);

  it("a platform's sender gets a notice in the same thread", async () => {
    fsMount = mountTmpfs(24);
    telegram = await startFakeTelegram();
    const fake = telegram;
    const host = await startPlatformHost(
      'telegram',
      { TELEGRAM_BOT_TOKEN: fake.token, TELEGRAM_API_BASE_URL: fake.url, PINCER_ALLOWED_USERS: '' },
      fsMount.dir,
    );
    await waitFor('polling', () => fake.calls.some((c) => c.method === 'getUpdates'), { timeoutMs: 20_000 });
    const text = (call: TelegramCall): string => String(call.body.text ?? '');
    const toChat = (call: TelegramCall): boolean => Number(call.body.chat_id) === 601;
    fake.userSends({ chatId: 601, userId: 601, text: 'before the disk filled' });
    await fake.waitForSent('the first answer', (c) => toChat(c) && text(c).includes('before the disk filled'), 60_000);
    const filler = fsMount.fill();
    fake.userSends({ chatId: 601, userId: 601, text: `while it is full ${'x'.repeat(3000)}` });
    await fake.waitForSent('the notice', (c) => toChat(c) && text(c).includes("the host's disk is full"), 30_000);
    expect(host.stderr()).toMatch(/SQLITE_FULL|not stored: .*full/); // the message really met the full disk
    fs.rmSync(filler);
    fake.userSends({ chatId: 601, userId: 601, text: 'after space returned' });
    await fake.waitForSent('the answer after', (c) => toChat(c) && text(c).includes('after space returned'), 60_000);
    expect(await host.stop()).toBe(0);
  }, 180_000);
});
