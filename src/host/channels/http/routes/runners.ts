import { z } from 'zod';
import type { HttpRouteModule } from '../types.js';
import { validate } from '../io.js';

/**
 * A session's runner from outside: stop it, restart it, read the tail of its log (the control page's Sessions
 * view). The log is the host's own file, never a file in the session folder.
 */
const LogQuery = z.object({ lines: z.coerce.number().int().min(1).max(5000).default(200) });

export const runnerRoutes: HttpRouteModule = ({ api }, { host }) => {
  api.post('/v1/sessions/:id/stop', async (c) => {
    await host.stopRunner(c.req.param('id'));
    return c.json({ ok: true });
  });
  api.post('/v1/sessions/:id/restart', async (c) => {
    await host.restartRunner(c.req.param('id'));
    return c.json({ ok: true });
  });
  api.get('/v1/sessions/:id/log', (c) => {
    const { lines } = validate(LogQuery, { lines: c.req.query('lines') });
    return c.json({ lines: host.runnerLogTail(c.req.param('id'), lines) });
  });
};
