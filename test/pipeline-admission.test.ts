import { describe, expect, it } from 'vitest';
import type { CentralStore } from '../src/host/central-db/store.js';
import type { AgentGroup, SessionRecord } from '../src/host/central-db/types.js';
import type { Inbox } from '../src/host/inbox.js';
import { SessionPipeline, type PipelineDeps } from '../src/host/session/pipeline.js';
import type { Admission, InboxRow, SessionPort } from '../src/host/session/port.js';
import type { HostUsage } from '../src/host/usage/host-usage.js';
import { createLogger } from '../src/shared/log.js';

/**
 * The budget's admission reaches a session before the message written after it: a raise made while an older
 * "over budget" admission is still on its way to a served session must not leave that session refusing the message.
 */
describe('SessionPipeline admission', () => {
  it('sends a raised budget before the next message even while an older refusal is in flight', async () => {
    const calls: string[] = [];
    const pending: Array<() => void> = [];
    let slow = false;
    const port = {
      setAdmission: (admission: Admission) => {
        calls.push(`admission over=${admission.over}`);
        return slow ? new Promise<void>((resolve) => pending.push(resolve)) : Promise.resolve();
      },
      accept: async (row: InboxRow) => {
        calls.push(`accept ${row.id}`);
        return { id: row.id, seq: 1 };
      },
      publishConfig: async () => {
        calls.push('publish');
      },
    } as unknown as SessionPort;
    const group = { id: 'ag-1', name: 'main' } as AgentGroup;
    const session = { id: 's-1', agentGroupId: 'ag-1' } as SessionRecord;
    let over = false;
    const deps = {
      store: { getSession: () => session, getAgentGroup: () => group } as unknown as CentralStore,
      inbox: { keep: () => undefined, markPushed: () => undefined, drop: () => undefined } as unknown as Inbox,
      usage: { budgets: { check: () => (over ? { over: true, notice: 'over the daily budget' } : { over: false }) } } as unknown as HostUsage,
      log: createLogger('test', () => undefined),
      configFor: () => ({ provider: 'mock' }),
    } as unknown as PipelineDeps;
    const pipeline = new SessionPipeline(session, port, deps);
    const row = (id: string) => ({ id, kind: 'chat', content: { text: id } }) as unknown as InboxRow;

    await pipeline.write(row('m1'));
    over = true;
    slow = true;
    const second = pipeline.write(row('m2')); // its "over" admission is held on the way
    while (pending.length === 0) await new Promise((resolve) => setImmediate(resolve));
    over = false;
    slow = false;
    const third = pipeline.write(row('m3'));
    await new Promise((resolve) => setTimeout(resolve, 10));
    pending.shift()!();
    await Promise.all([second, third]);
    expect(calls).toEqual(['publish', 'admission over=false', 'accept m1', 'admission over=true', 'accept m2', 'admission over=false', 'accept m3']);
  });

  it("publishes the group's changed settings before the next message is accepted (no turn needed between)", async () => {
    const calls: string[] = [];
    const port = {
      setAdmission: async () => undefined,
      accept: async (row: InboxRow) => {
        calls.push(`accept ${row.id}`);
        return { id: row.id, seq: 1 };
      },
      publishConfig: async (config: { model?: string }) => {
        calls.push(`publish ${config.model}`);
      },
    } as unknown as SessionPort;
    const group = { id: 'ag-1', name: 'main' } as AgentGroup;
    const session = { id: 's-1', agentGroupId: 'ag-1' } as SessionRecord;
    let model = 'model-a';
    const deps = {
      store: { getSession: () => session, getAgentGroup: () => group } as unknown as CentralStore,
      inbox: { keep: () => undefined, markPushed: () => undefined, drop: () => undefined } as unknown as Inbox,
      usage: { budgets: { check: () => ({ over: false }) } } as unknown as HostUsage,
      log: createLogger('test', () => undefined),
      configFor: () => ({ provider: 'mock', model }),
    } as unknown as PipelineDeps;
    const pipeline = new SessionPipeline(session, port, deps);
    const row = (id: string) => ({ id, kind: 'chat', content: { text: id } }) as unknown as InboxRow;
    await pipeline.write(row('m1'));
    await pipeline.write(row('m2'));
    model = 'model-b';
    await pipeline.write(row('m3'));
    expect(calls).toEqual(['publish model-a', 'accept m1', 'accept m2', 'publish model-b', 'accept m3']);
  });
});
