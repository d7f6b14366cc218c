import { timingSafeEqual } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';
import type { HttpEnv } from './types.js';

/**
 * Authentication of `api` routes: `Authorization: Bearer <token>`, compared in constant time. Anything else is 401
 * with `WWW-Authenticate: Bearer`, before any route runs.
 */
export function requireBearer(token: string): MiddlewareHandler<HttpEnv> {
  const expected = Buffer.from(token);
  return async (c, next) => {
    const given = Buffer.from(/^Bearer (.+)$/.exec(c.req.header('authorization') ?? '')?.[1] ?? '');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
      c.header('WWW-Authenticate', 'Bearer');
      return c.json({ error: 'missing or wrong bearer token (Authorization: Bearer <token>)' }, 401);
    }
    await next();
  };
}
