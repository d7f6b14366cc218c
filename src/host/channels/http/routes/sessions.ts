import { canSee } from '../auth.js';
import type { SessionSummary } from '../../types.js';
import type { HttpRouteModule } from '../types.js';

/**
 * Sessions and conversations: the sessions of the host with their runner's state (diagnostics), the conversations
 * of the HTTP channel with their sessions and last event, and the unauthenticated health check. A token limited to
 * some conversations sees only those.
 */
export const sessionRoutes: HttpRouteModule = ({ api, open }, { host, mailbox }) => {
  open.get('/v1/health', (c) => c.json({ ok: true }));

  api.get('/v1/sessions', async (c) =>
    c.json({ sessions: (await host.listSessions()).filter((s) => canSee(c.get('principal'), s.channelType, s.platformId)) }),
  );

  api.get('/v1/conversations', async (c) => {
    const byId = new Map<string, { id: string; sessions: SessionSummary[]; lastEventId: number | null; lastEventAt: string | null }>();
    for (const session of await host.listSessions()) {
      if (session.channelType !== 'http' || !canSee(c.get('principal'), 'http', session.platformId)) continue;
      let entry = byId.get(session.platformId);
      if (!entry) {
        const last = mailbox.lastEvent(session.platformId);
        entry = { id: session.platformId, sessions: [], lastEventId: last?.id ?? null, lastEventAt: last?.createdAt ?? null };
        byId.set(session.platformId, entry);
      }
      entry.sessions.push(session);
    }
    return c.json({ conversations: [...byId.values()] });
  });
};
