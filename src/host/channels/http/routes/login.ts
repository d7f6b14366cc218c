import type { Context } from 'hono';
import { getConnInfo } from '@hono/node-server/conninfo';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import { LoginThrottle } from '../login-throttle.js';
import { z } from 'zod';
import { BROWSER_SESSION_MS, hashSecret, type Principal } from '../access.js';
import { sameOrigin, SESSION_COOKIE } from '../auth.js';
import { readJson, validate } from '../io.js';
import { PincerError } from '../../../../shared/errors.js';
import type { HttpRouteModule } from '../types.js';

/**
 * Browser sessions, for a web page served by this host: `POST /v1/login {token}` sets an HttpOnly, SameSite=Strict
 * cookie that then authenticates every route (the SSE stream too, since EventSource sends cookies but no headers),
 * `POST /v1/logout` ends it, `GET /v1/whoami` says who the caller is. No CORS headers are ever sent, and cookie
 * requests that change something from another origin are refused, so other sites cannot use the session.
 */

const Login = z.object({ token: z.string().min(1) });

export const loginRoutes: HttpRouteModule = ({ api, open }, { auth, access }) => {
  const throttle = new LoginThrottle();
  open.post('/v1/login', async (c) => {
    if (!sameOrigin(c)) throw new PincerError('forbidden', 'cross-origin login refused: log in from the page of this host');
    const address = clientAddress(c);
    const waitMs = throttle.waitMs(address);
    if (waitMs > 0) {
      c.header('Retry-After', String(Math.ceil(waitMs / 1000)));
      return c.json({ error: `too many failed logins from ${address}: try again in ${Math.ceil(waitMs / 1000)} s` }, 429);
    }
    const { token } = validate(Login, await readJson(c));
    const principal = auth.byToken(token);
    if (!principal) {
      throttle.fail(address);
      throw new PincerError('unauthorized', 'wrong token: use the admin token (the http-token file of the home) or one made with `pincer token create`', {
        field: 'token',
      });
    }
    throttle.succeed(address);
    const session = access.openBrowserSession(hashSecret(token));
    setCookie(c, SESSION_COOKIE, session.id, {
      httpOnly: true,
      sameSite: 'Strict',
      path: '/',
      secure: new URL(c.req.url).protocol === 'https:',
      maxAge: Math.floor(BROWSER_SESSION_MS / 1000),
    });
    return c.json(describe(principal));
  });

  api.post('/v1/logout', (c) => {
    const cookie = getCookie(c, SESSION_COOKIE);
    if (cookie) access.closeBrowserSession(cookie);
    deleteCookie(c, SESSION_COOKIE, { path: '/' });
    return c.json({ ok: true });
  });

  api.get('/v1/whoami', (c) => c.json(describe(c.get('principal'))));
};

function clientAddress(c: Context): string {
  try {
    return getConnInfo(c).remote.address ?? 'unknown';
  } catch {
    // no socket address (an in-process request): all such requests share one throttle
    return 'unknown';
  }
}

function describe(principal: Principal): { name: string; admin: boolean; conversations: string[] | null } {
  return { name: principal.name, admin: principal.kind === 'admin', conversations: principal.kind === 'admin' ? null : [...principal.conversations] };
}
