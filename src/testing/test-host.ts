import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { InboundReceipt, OutboundDelivery } from '../host/channels/types.js';
import { loadHostConfig } from '../host/config.js';
import { createHost, type Host } from '../host/host.js';
import type { ConversationRef } from '../host/types.js';
import type { AgentProvider } from '../providers/types.js';
import { createLogger, type Logger } from '../shared/log.js';
import { inProcessLauncher } from './in-process-launcher.js';
import { ScriptedProvider } from './scripted-provider.js';
import { TestChannel } from './test-channel.js';

export interface TestHostOptions {
  /** what each session's runner drives: one provider for all, or one per session id (default: an empty script). */
  provider?: AgentProvider | ((sessionId: string) => AgentProvider);
  /** the host's environment besides the test home (PINCER_* settings); runner settings reach runners from it. */
  env?: Record<string, string>;
  /** the host's log (default: kept in `TestHost.logLines`, printed by nothing) */
  log?: Logger;
  /** the host's clock (`HostOptions.clock`): a test moves it past a back-off instead of waiting it out */
  clock?: () => number;
}

/** A real host in this process: its central DB in a fresh home, a test channel, runners in-process (no child process). */
export interface TestHost {
  host: Host;
  home: string;
  channel: TestChannel;
  /** every line the host and its runners logged */
  logLines: string[];
  /** the conversation `platformId` of the test channel */
  conversation(platformId?: string): ConversationRef;
  /** a chat message from the user into `platformId` (default `c1`), as a channel would hand it to the host */
  send(text: string, platformId?: string): Promise<InboundReceipt>;
  /** the next chat message or notice delivered to `platformId` after the deliveries seen so far (or after `after`) */
  reply(platformId?: string, options?: { after?: number; timeoutMs?: number }): Promise<OutboundDelivery>;
  /** stop the host (its runners finish) and remove its home */
  stop(): Promise<void>;
}

/**
 * A host for tests of its stages, wired as `pincer host` wires one but with a test channel and runners in this
 * process: each is the runner's own code (`prepareRunner`) over a real session folder and database, driving the given
 * provider (a `ScriptedProvider`, typically). Starts in well under a second; the end-to-end tests through real
 * processes stay the proof of the whole system.
 */
export async function createTestHost(options: TestHostOptions = {}): Promise<TestHost> {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-test-host-'));
  const logLines: string[] = [];
  const log = options.log ?? createLogger('host', (line) => logLines.push(line));
  const given = options.provider ?? new ScriptedProvider();
  const provider = typeof given === 'function' ? given : () => given;
  const channel = new TestChannel();
  let host: Host;
  try {
    const config = loadHostConfig({
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      TZ: 'UTC',
      // what selection picks (and names the session's provider by); the runner drives the given provider instead
      AGENT_PROVIDER: 'mock',
      ...options.env,
      PINCER_HOME: home,
      // the launcher is the in-process one: no sandbox to choose
      PINCER_RUNNER: 'process',
    });
    host = await createHost({
      config,
      channels: [channel],
      log,
      launch: inProcessLauncher({ provider, log: createLogger('runner', (line) => logLines.push(line)) }),
      ...(options.clock ? { clock: options.clock } : {}),
    });
  } catch (err) {
    fs.rmSync(home, { recursive: true, force: true });
    throw err;
  }
  const conversation = (platformId = 'c1'): ConversationRef => ({ channelType: channel.type, platformId, threadId: null });
  let seen = 0;
  return {
    host,
    home,
    channel,
    logLines,
    conversation,
    send: (text, platformId) =>
      host.acceptInbound({ conversation: conversation(platformId), kind: 'chat', content: { text, sender: 'user', senderId: 'test:user' } }),
    reply: async (platformId = 'c1', replyOptions = {}) => {
      const after = replyOptions.after ?? seen;
      const found = await channel.next((d) => d.conversation.platformId === platformId && (d.payload.type === 'chat' || d.payload.type === 'notice'), {
        after,
        timeoutMs: replyOptions.timeoutMs,
      });
      seen = Math.max(seen, channel.delivered.indexOf(found) + 1);
      return found;
    },
    stop: async () => {
      await host.stop();
      fs.rmSync(home, { recursive: true, force: true });
    },
  };
}
