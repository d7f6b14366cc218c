import { timingSafeEqual } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';
import { HostError } from '../../errors.js';
import type { HttpEnv } from './types.js';

/** the shortest token accepted at all (PINCER_HTTP_TOKEN); a generated token file holds 32 random bytes. */
const MIN_TOKEN_LENGTH = 16;

/**
 * Authentication of `api` routes: `Authorization: Bearer <token>`, compared in constant time. Anything else is 401
 * with `WWW-Authenticate: Bearer`, before any route runs.
 */
export function requireBearer(token: string): MiddlewareHandler<HttpEnv> {
  // An empty token would equal a missing header: authentication must never be off by accident.
  if (token.length < MIN_TOKEN_LENGTH) throw new HostError('config', `the HTTP token must be at least ${MIN_TOKEN_LENGTH} characters`);
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
