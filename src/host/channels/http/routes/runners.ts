import type { Context } from 'hono';
import { z } from 'zod';
import { canSee } from '../auth.js';
import { validate } from '../io.js';
import { PincerError } from '../../../../shared/errors.js';
import type { HttpEnv, HttpRouteModule } from '../types.js';

/**
 * A session's runner from outside: stop it, restart it, read the tail of its log (the control page's Sessions
 * view). The log is the host's own file, never a file in the session folder. A token limited to some conversations
 * reaches only their sessions; any other session is a 404 to it, as if it did not exist.
 */
const LogQuery = z.object({ lines: z.coerce.number().int().min(1).max(5000).default(200) });

export const runnerRoutes: HttpRouteModule = ({ api }, { host }) => {
  const visibleSession = async (c: Context<HttpEnv>): Promise<string> => {
    const id = c.req.param('id') ?? '';
    const session = (await host.listSessions()).find((s) => s.id === id);
    if (!session || !canSee(c.get('principal'), session.channelType, session.platformId)) throw new PincerError('not-found', `no session "${id}"`);
    return id;
  };

  api.post('/v1/sessions/:id/stop', async (c) => {
    await host.stopRunner(await visibleSession(c));
    return c.json({ ok: true });
  });
  api.post('/v1/sessions/:id/restart', async (c) => {
    await host.restartRunner(await visibleSession(c));
    return c.json({ ok: true });
  });
  api.get('/v1/sessions/:id/log', async (c) => {
    const id = await visibleSession(c);
    const { lines } = validate(LogQuery, { lines: c.req.query('lines') });
    return c.json({ lines: await host.runnerLogTail(id, lines) });
  });
};
