import { isIP } from 'node:net';
import type { MiddlewareHandler } from 'hono';
import type { HttpEnv } from './types.js';

/**
 * The `Host` header check against DNS rebinding: a page on another site whose name is made to resolve to 127.0.0.1
 * reaches this server as a same-origin request for *that* name, and could read what needs no token from loopback
 * (`/metrics`) or log in with a stolen token. A rebinding always comes under a name, never an address, so the server
 * answers only to IP literals, `localhost`, its own bind name and the names given in PINCER_HTTP_HOSTNAMES (the public
 * name of a reverse proxy in front of it); any other name gets 421.
 */
export function hostHeaderCheck(bindHost: string, extraNames: readonly string[]): MiddlewareHandler<HttpEnv> {
  const allowed = new Set(['localhost', ...extraNames, ...(isIP(bindHost) ? [] : [bindHost])].map((name) => name.toLowerCase()));
  return async (c, next) => {
    const name = hostName(c.req.header('host') ?? '');
    if (name !== undefined && (isIP(name) !== 0 || allowed.has(name) || name.endsWith('.localhost'))) return next();
    return c.json(
      {
        error: `this server does not answer to the host name "${name ?? ''}" (allowed: IP addresses, localhost${extraNames.length ? `, ${extraNames.join(', ')}` : ''}; set PINCER_HTTP_HOSTNAMES for more)`,
      },
      421,
    );
  };
}

/** The name of a Host header without its port: `a.example:8080` → `a.example`, `[::1]:80` → `::1`. */
function hostName(header: string): string | undefined {
  const value = header.trim().toLowerCase();
  if (value === '') return undefined;
  if (value.startsWith('[')) {
    const end = value.indexOf(']');
    return end === -1 ? undefined : value.slice(1, end);
  }
  const colon = value.lastIndexOf(':');
  return (colon === -1 ? value : value.slice(0, colon)).replace(/\.$/, '');
}
