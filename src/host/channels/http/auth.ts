import type { Context, MiddlewareHandler } from 'hono';
import { getCookie } from 'hono/cookie';
import { timingSafeEqual } from 'node:crypto';
import { PincerError } from '../../../shared/errors.js';
import { hashSecret, type AccessStore, type Principal } from './access.js';
import type { HttpEnv } from './types.js';

/**
 * Authentication and authorisation of `api` routes. A caller is either `Authorization: Bearer <token>` (the admin
 * token of the home's token file, or a token made with `pincer token`) or the browser session cookie a token login
 * set. Anything else is 401 before any route runs. Routes then ask `requireConversation` / `requireAdmin`, or filter
 * what they list with `canSee`.
 */

export const SESSION_COOKIE = 'pincer_session';
const SAFE_METHODS = new Set(['GET', 'HEAD']);
/** the shortest admin token accepted at all (PINCER_HTTP_TOKEN); a generated token file holds 32 random bytes. */
const MIN_TOKEN_LENGTH = 16;

/** Resolves tokens and browser sessions to callers. */
export class Authenticator {
  private readonly adminToken: Buffer;
  private readonly adminHash: string;

  constructor(
    adminToken: string,
    readonly access: AccessStore,
  ) {
    // An empty token would equal a missing header: authentication must never be off by accident.
    if (adminToken.length < MIN_TOKEN_LENGTH) throw new PincerError('config', `the HTTP token must be at least ${MIN_TOKEN_LENGTH} characters`);
    this.adminToken = Buffer.from(adminToken);
    this.adminHash = hashSecret(adminToken);
  }

  /** The caller a bearer token stands for. */
  byToken(token: string): Principal | undefined {
    const given = Buffer.from(token);
    if (given.length === this.adminToken.length && timingSafeEqual(given, this.adminToken)) return { kind: 'admin', name: 'admin' };
    return this.access.principalOf(token);
  }

  /** The caller behind a token hash (what a browser session keeps). */
  byTokenHash(tokenHash: string): Principal | undefined {
    if (tokenHash === this.adminHash) return { kind: 'admin', name: 'admin' };
    return this.access.principalOfHash(tokenHash);
  }

  /** Middleware: sets `principal`, or answers 401. */
  middleware(): MiddlewareHandler<HttpEnv> {
    return async (c, next) => {
      const bearer = /^Bearer (.+)$/.exec(c.req.header('authorization') ?? '')?.[1];
      let principal: Principal | undefined;
      if (bearer !== undefined) principal = this.byToken(bearer);
      else {
        const cookie = getCookie(c, SESSION_COOKIE);
        const tokenHash = cookie ? this.access.browserSessionToken(cookie) : undefined;
        principal = tokenHash ? this.byTokenHash(tokenHash) : undefined;
        // SameSite=Strict keeps other sites' requests from carrying the cookie; a foreign Origin is refused as well.
        if (principal && !SAFE_METHODS.has(c.req.method) && !sameOrigin(c)) {
          return c.json({ error: 'cross-origin request refused: the session cookie works only from the page of this host' }, 403);
        }
      }
      if (!principal) {
        c.header('WWW-Authenticate', 'Bearer');
        return c.json({ error: 'missing or wrong bearer token (Authorization: Bearer <token>), and no login session cookie' }, 401);
      }
      c.set('principal', principal);
      const cookie = bearer === undefined ? getCookie(c, SESSION_COOKIE) : undefined;
      c.set('stillAuthorised', () => {
        if (bearer !== undefined) return this.byToken(bearer) !== undefined;
        const tokenHash = cookie ? this.access.browserSessionToken(cookie) : undefined;
        return tokenHash !== undefined && this.byTokenHash(tokenHash) !== undefined;
      });
      await next();
    };
  }
}

/** May the caller see a conversation? Scoped tokens see only their own conversations of the HTTP channel. */
export function canSee(principal: Principal, channelType: string | null, platformId: string | null): boolean {
  return principal.kind === 'admin' || (channelType === 'http' && platformId !== null && principal.conversations.has(platformId));
}

/** 403 unless the caller may use this HTTP conversation. */
export function requireConversation(c: Context<HttpEnv>, conversation: string): void {
  const principal = c.get('principal');
  if (!canSee(principal, 'http', conversation)) {
    throw new PincerError('forbidden', `token "${principal.name}" may not use conversation "${conversation}"`, { field: 'conversation' });
  }
}

/** 403 unless the caller is an admin. */
export function requireAdmin(c: Context<HttpEnv>, what = 'this'): void {
  const principal = c.get('principal');
  if (principal.kind !== 'admin') throw new PincerError('forbidden', `token "${principal.name}" is limited to its conversations; ${what} needs an admin token`);
}

/** No Origin header (not a browser), or one naming this host. */
export function sameOrigin(c: Context): boolean {
  const origin = c.req.header('origin');
  if (!origin) return true;
  try {
    return new URL(origin).host === c.req.header('host');
  } catch {
    // a malformed Origin is not this host's origin
    return false;
  }
}
