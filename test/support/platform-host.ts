import path from 'node:path';
import { openSessionDb } from '../../src/db/connection.js';
import type { InboundRow, OutboundRow } from '../../src/db/types.js';
import { startHost, type HostHandle } from './host-harness.js';
import { waitFor } from './wait.js';

/** Reading what a real host stored for a chat platform: its sessions (over the HTTP API) and their rows. */
export interface PlatformSession {
  id: string;
  platformId: string;
  threadKey: string;
}

export async function platformSessions(host: HostHandle, channelType: string): Promise<PlatformSession[]> {
  const res = await host.request('GET', '/v1/sessions');
  const sessions = res.body.sessions as (PlatformSession & { channelType: string })[];
  return sessions.filter((s) => s.channelType === channelType);
}

export async function sessionFor(host: HostHandle, channelType: string, platformId: string): Promise<PlatformSession> {
  return waitFor(`a ${channelType} session for ${platformId}`, async () =>
    (await platformSessions(host, channelType)).find((s) => s.platformId === platformId),
  );
}

export function inboundOf(host: HostHandle, sessionId: string): InboundRow[] {
  const db = openSessionDb(path.join(host.sessionDir(sessionId), 'session.db'), { readonly: true });
  try {
    return db.prepare('SELECT * FROM messages_in ORDER BY seq').all() as InboundRow[];
  } finally {
    db.close();
  }
}

/** The session's scheduled-task rows (every occurrence of every task), oldest first. */
export function taskRowsOf(host: HostHandle, sessionId: string): InboundRow[] {
  return inboundOf(host, sessionId).filter((row) => row.kind === 'task');
}

export function outboundOf(host: HostHandle, sessionId: string): OutboundRow[] {
  const db = openSessionDb(path.join(host.sessionDir(sessionId), 'session.db'), { readonly: true });
  try {
    return db.prepare('SELECT * FROM messages_out ORDER BY seq').all() as OutboundRow[];
  } finally {
    db.close();
  }
}

/** All chat-sdk rows of every session of a platform. */
export async function platformRows(host: HostHandle, channelType: string): Promise<InboundRow[]> {
  const rows: InboundRow[] = [];
  for (const session of await platformSessions(host, channelType)) rows.push(...inboundOf(host, session.id).filter((r) => r.kind === 'chat-sdk'));
  return rows;
}

/** A real host with one chat platform configured by `env`, once that platform's adapter says it is connected. */
export async function startPlatformHost(platform: string, env: Record<string, string>, home?: string): Promise<HostHandle> {
  const host = await startHost(env, home);
  await waitFor(`${platform} connected`, () => new RegExp(`${platform}: connected`).test(host.stderr()), { timeoutMs: 20_000 });
  return host;
}

/** A platform's webhook request (as its fake made it) posted to the host, without the API token; its status. */
export async function deliverWebhook(host: HostHandle, platform: string, event: { body: string; headers: Record<string, string> }): Promise<number> {
  return (await host.request('POST', `/webhooks/${platform}`, undefined, { token: null, raw: event.body, headers: event.headers })).status;
}
