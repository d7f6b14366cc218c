import type { HttpRouteModule } from '../types.js';

/** Sessions, with their runner's state, for diagnostics; and the unauthenticated health check. */
export const sessionRoutes: HttpRouteModule = ({ api, open }, { host }) => {
  open.get('/v1/health', (c) => c.json({ ok: true }));
  api.get('/v1/sessions', (c) => c.json({ sessions: host.listSessions() }));
};
