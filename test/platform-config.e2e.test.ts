import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadHostConfig } from '../src/host/config.js';
import { startHost, stopAllHosts } from './support/host-harness.js';
import { BUILT_CLI } from './support/runner-harness.js';

/**
 * Enabling chat platforms from each adapter's own variables: `pincer doctor` lists every platform (on and how its
 * events arrive, off and what to set, or configured in part); the host refuses to start with a platform configured
 * in part, or a webhook platform without its HTTP listener; platform secrets never reach a runner's environment.
 */
const homes: string[] = [];

afterEach(async () => {
  expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
  for (const home of homes.splice(0)) fs.rmSync(home, { recursive: true, force: true });
});

function doctor(env: Record<string, string>) {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-doctor-platforms-'));
  homes.push(home);
  const result = spawnSync(process.execPath, [BUILT_CLI, 'doctor', '--home', home], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, CLAUDE_CONFIG_DIR: path.join(os.tmpdir(), 'pincer-no-claude-login'), ...env },
    encoding: 'utf8',
    timeout: 20_000,
  });
  return { code: result.status, out: result.stdout };
}

describe('chat platform configuration', () => {
  it('pincer doctor lists every platform: on with how events arrive, off with what to set', () => {
    const { code, out } = doctor({ TELEGRAM_BOT_TOKEN: '1:x', SLACK_BOT_TOKEN: 'xoxb-1', SLACK_SIGNING_SECRET: 's' });
    expect(code).toBe(0);
    const section = out.slice(out.indexOf('chat platforms'));
    expect(section).toMatch(/telegram\s+on: long polling \(no public URL needed\)/);
    expect(section).toMatch(/slack\s+on: Events API webhook .*webhook URL: https:\/\/<public address of the --http listener>\/webhooks\/slack/);
    expect(section).toMatch(/discord\s+off \(set DISCORD_BOT_TOKEN, DISCORD_PUBLIC_KEY and DISCORD_APPLICATION_ID\)/);
    expect(section).toMatch(/whatsapp\s+off/);
    expect(section).toMatch(/github\s+off/);
  });

  it('pincer doctor fails a platform configured in part, naming what is missing', () => {
    const { code, out } = doctor({ WHATSAPP_ACCESS_TOKEN: 't', WHATSAPP_PHONE_NUMBER_ID: '1' });
    expect(code).toBe(1);
    expect(out).toMatch(/whatsapp\s+✗ configured in part: WHATSAPP_APP_SECRET, WHATSAPP_VERIFY_TOKEN missing; the host will not start/);
  });

  it('the host refuses to start with a platform configured in part, and says what is missing', async () => {
    await expect(startHost({ SLACK_BOT_TOKEN: 'xoxb-1' })).rejects.toThrow(/Slack is configured in part: SLACK_SIGNING_SECRET missing/);
  });

  it('platform secrets are not passed on to runners (nor any variable the settings registry does not give runners)', () => {
    const config = loadHostConfig({
      TZ: 'UTC',
      PINCER_HOME: '/tmp/x',
      TELEGRAM_BOT_TOKEN: '1:secret',
      SLACK_SIGNING_SECRET: 's',
      GITHUB_WEBHOOK_SECRET: 'g',
      KEEP_ME: '1',
      PINCER_BATCH_MAX_MESSAGES: '7',
    });
    expect(config.runners.env).toMatchObject({ PINCER_BATCH_MAX_MESSAGES: '7' });
    expect(config.runners.env).not.toHaveProperty('KEEP_ME');
    for (const name of ['TELEGRAM_BOT_TOKEN', 'SLACK_SIGNING_SECRET', 'GITHUB_WEBHOOK_SECRET']) expect(config.runners.env).not.toHaveProperty(name);
  });
});
