import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { insertOutbound } from '../src/db/messages.js';
import { ActionHandlers } from '../src/host/actions.js';
import { openCentralDb, CentralStore } from '../src/host/central-db/store.js';
import { CENTRAL_SCHEMA_VERSION } from '../src/host/central-db/schema.js';
import type { ChannelAdapter, OutboundDelivery } from '../src/host/channels/types.js';
import { loadHostConfig } from '../src/host/config.js';
import { Delivery, type SessionHandle } from '../src/host/session/delivery.js';
import { RunnerSupervisor } from '../src/host/session/runners.js';
import { SessionEngine } from '../src/host/session/engine.js';
import { LocalSessionPort } from '../src/host/session/local-port.js';
import { SessionDirectory } from '../src/host/sessions.js';
import { writeJsonAtomic } from '../src/db/layout.js';
import { loadRunnerConfig } from '../src/runner/config.js';
import { createLogger } from '../src/shared/log.js';
import { cleanupSessions, createTestSession } from './support/session.js';

/** Delivery against a real session DB and a hand-written channel that fails on demand. */
const silent = createLogger('host', () => undefined);
const homes: string[] = [];

const engines: SessionEngine[] = [];

afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.close();
  cleanupSessions();
  for (const home of homes.splice(0)) fs.rmSync(home, { recursive: true, force: true });
});

/** A channel adapter that fails its first `failures` deliveries. */
class FlakyChannel implements ChannelAdapter {
  readonly type = 'http';
  readonly capabilities = { localInput: false, attachable: false };
  readonly attempts: OutboundDelivery[] = [];
  constructor(private failures: number) {}
  async start(): Promise<void> {}
  async stop(): Promise<void> {}
  async deliver(message: OutboundDelivery) {
    this.attempts.push(message);
    if (this.failures-- > 0) throw new Error('platform is down');
    return { platformMessageId: `p-${this.attempts.length}` };
  }
}

function setup(channel: ChannelAdapter) {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-home-'));
  homes.push(home);
  const config = loadHostConfig({ TZ: 'UTC', PINCER_HOME: home, AGENT_PROVIDER: 'mock' });
  const store = new CentralStore(openCentralDb(path.join(home, 'pincer.db')));
  const sessions = new SessionDirectory(store, config, silent);
  const group = sessions.ensureDefaultGroup()!;
  const test = createTestSession();
  const session = store.insertSession({ id: 's-1', agentGroupId: group.id, channelType: 'http', platformId: 'c1', threadKey: '', folder: test.paths.root });
  // The session's own port (its engine not running: nothing but delivery happens here).
  const engine = new SessionEngine({
    session: { id: session.id, folder: session.folder },
    config: { ...config, runners: { ...config.runners, kind: 'process' } },
    supervisor: new RunnerSupervisor({ ...config.runners, kind: 'process' }, silent, () => undefined),
    launch: { groupDir: path.join(home, 'agent'), globalDir: path.join(home, 'global'), logFile: path.join(home, 'runner.log') },
    log: silent,
  });
  engines.push(engine);
  const port = new LocalSessionPort(engine);
  const handle: SessionHandle = { port, session, group };
  const delivery = new Delivery({
    channels: new Map([['http', channel]]),
    // as `pincer host` has it: a `pincer chat` may attach the terminal later
    attachable: new Set(['terminal']),
    store,
    actions: new ActionHandlers({ store, sessions, globalAdmins: [] }),
    toAgent: async () => undefined,
    write: (_handle, row) => port.accept(row),
    config: { maxAttempts: 3, retryBaseMs: 1 },
    log: silent,
  });
  /** deliver until nothing waits for a retry. */
  const drain = async (): Promise<void> => {
    for (let i = 0; i < 100; i++) {
      const wait = await delivery.deliverSession(handle, (await port.sync(0, 0, 0)).outbound);
      if (wait === undefined) return;
      await new Promise((r) => setTimeout(r, wait));
    }
  };
  return { test, handle, delivery, drain, store };
}

describe('delivery', () => {
  it('marks a row delivered with the platform id only after the channel took it, retrying a failure', async () => {
    const channel = new FlakyChannel(1);
    const { test, drain } = setup(channel);
    const { id } = insertOutbound(test.db, {
      kind: 'chat',
      content: { text: 'hi' },
      routing: { channelType: 'http', platformId: 'c1', threadId: null, inReplyTo: null },
    });
    await drain();
    expect(channel.attempts).toHaveLength(2);
    expect(channel.attempts[1]!.payload).toEqual({ type: 'chat', text: 'hi', files: [] });
    const row = test.outbound().find((r) => r.id === id)!;
    expect(row.delivered_at).not.toBeNull();
    expect(row.platform_message_id).toBe('p-2');
    expect(row.delivery_error).toBeNull();
  });

  it('records delivery_error after the attempt limit, never marks it delivered, and tells the agent in its next prompt', async () => {
    const channel = new FlakyChannel(99);
    const { test, drain } = setup(channel);
    const { seq } = insertOutbound(test.db, {
      kind: 'chat',
      content: { text: 'lost?' },
      routing: { channelType: 'http', platformId: 'c1', threadId: null, inReplyTo: null },
    });
    await drain();
    expect(channel.attempts).toHaveLength(3);
    const [row] = test.outbound();
    expect(row!.delivered_at).toBeNull();
    expect(row!.delivery_error).toBe('platform is down (after 3 attempts)');
    const [notice] = test.allInbound();
    expect(notice).toMatchObject({ kind: 'system', trigger: 0, channel_type: 'http', platform_id: 'c1', status: 'pending' });
    expect(JSON.parse(notice!.content)).toMatchObject({ action: 'deliver_message', status: 'error', result: { messageId: seq } });
  });

  it.each([
    ['a channel the host does not have', { kind: 'chat', content: { text: 'x' }, channelType: 'slack' }, /no channel "slack"/],
    ['content that is not JSON', { kind: 'chat', content: '{oops', channelType: 'http' }, /not valid JSON/],
    ['a file outside the outbox', { kind: 'chat', content: { text: 'x', files: ['../session.db'] }, channelType: 'http' }, /not a plain name/],
    ['a missing file', { kind: 'chat', content: { text: 'x', files: ['report.pdf'] }, channelType: 'http' }, /missing from outbox/],
  ])('refuses %s at once, without retrying', async (_what, row, error) => {
    const channel = new FlakyChannel(0);
    const { test, drain } = setup(channel);
    insertOutbound(test.db, {
      kind: row.kind,
      content: row.content,
      routing: { channelType: row.channelType, platformId: 'c1', threadId: null, inReplyTo: null },
    });
    await drain();
    expect(channel.attempts).toHaveLength(0);
    expect(test.outbound()[0]!.delivery_error).toMatch(error);
  });

  it('keeps rows for the terminal while no terminal is attached (the next pincer chat shows them)', async () => {
    const channel = new FlakyChannel(0);
    const { test, drain } = setup(channel);
    insertOutbound(test.db, {
      kind: 'chat',
      content: { text: 'for later' },
      routing: { channelType: 'terminal', platformId: 'local', threadId: null, inReplyTo: null },
    });
    const { id } = insertOutbound(test.db, {
      kind: 'chat',
      content: { text: 'now' },
      routing: { channelType: 'http', platformId: 'c1', threadId: null, inReplyTo: null },
    });
    await drain();
    const rows = test.outbound();
    expect(rows[0]).toMatchObject({ delivered_at: null, delivery_error: null });
    expect(rows.find((r) => r.id === id)!.delivered_at).not.toBeNull();
  });

  it('delivers a file from outbox/<message id>/ with its path', async () => {
    const channel = new FlakyChannel(0);
    const { test, drain } = setup(channel);
    const id = 'out-1';
    fs.mkdirSync(path.join(test.paths.outbox, id), { recursive: true });
    fs.writeFileSync(path.join(test.paths.outbox, id, 'report.txt'), 'data');
    insertOutbound(test.db, {
      id,
      kind: 'chat',
      content: { text: 'here', files: ['report.txt'] },
      routing: { channelType: 'http', platformId: 'c1', threadId: null, inReplyTo: null },
    });
    await drain();
    expect(channel.attempts[0]!.payload).toEqual({
      type: 'chat',
      text: 'here',
      files: [{ name: 'report.txt', path: path.join(test.paths.outbox, id, 'report.txt') }],
    });
  });
});

describe('central DB', () => {
  it('is created at the current schema version and reopened without change', () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-central-'));
    homes.push(home);
    const file = path.join(home, 'pincer.db');
    const db = openCentralDb(file);
    expect(db.pragma('user_version', { simple: true })).toBe(CENTRAL_SCHEMA_VERSION);
    new CentralStore(db).createAgentGroup({ name: 'g', folder: 'g', provider: 'mock', timezone: 'UTC', admins: ['a'] });
    db.close();
    const again = new CentralStore(openCentralDb(file));
    expect(again.findAgentGroup('g')).toMatchObject({ name: 'g', admins: ['a'], sessionMode: 'shared', configGeneration: 1 });
    again.db.close();
  });

  it('publishes a group configuration change as a new generation the runner accepts', () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-central-'));
    homes.push(home);
    const config = loadHostConfig({ TZ: 'Europe/Berlin', PINCER_HOME: home, AGENT_PROVIDER: 'mock' });
    const store = new CentralStore(openCentralDb(path.join(home, 'pincer.db')));
    const sessions = new SessionDirectory(store, config, silent);
    const group = sessions.ensureDefaultGroup()!;
    const session = sessions.sessionFor(group, { channelType: 'http', platformId: 'c', threadId: null });
    writeJsonAtomic(path.join(session.folder, 'config.json'), sessions.configFor(session, group));
    const read = () => JSON.parse(fs.readFileSync(path.join(session.folder, 'config.json'), 'utf8')) as Record<string, unknown>;
    expect(read()).toMatchObject({ provider: 'mock', timezone: 'Europe/Berlin', generation: 1 });
    writeJsonAtomic(path.join(session.folder, 'config.json'), sessions.configFor(session, store.updateAgentGroup(group.id, { provider: 'echo', model: 'm1' })));
    expect(read()).toEqual({
      provider: 'echo',
      model: 'm1',
      timezone: 'Europe/Berlin',
      assistantName: 'main',
      generation: 2,
      destinations: [{ channelType: 'http', platformId: 'c' }],
    });
    expect(loadRunnerConfig({ PINCER_WORKSPACE: session.folder })).toMatchObject({ provider: 'echo', model: 'm1', timeZone: 'Europe/Berlin' });
    expect(fs.readdirSync(session.folder).filter((f) => f.endsWith('.tmp'))).toEqual([]);
    store.db.close();
  });
});
