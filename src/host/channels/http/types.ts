import type { Hono } from 'hono';
import type { Logger } from '../../../shared/log.js';
import type { HostApi } from '../types.js';
import type { AccessStore, Principal } from './access.js';
import type { HttpMailbox } from './mailbox.js';
import type { SseHub } from './sse.js';

/**
 * Types shared by the HTTP channel's modules. An area of the API (conversations, webhooks, files, …) is one
 * `HttpRouteModule`: a function that adds its routes to the two routers it is given. Routes go on `api` (behind
 * authentication) unless they authenticate the request themselves (a signed webhook, the health check), which is
 * the only reason to use `open`.
 */

/** Hono environment of every route: request-scoped values set by middleware. */
export interface HttpEnv {
  Variables: {
    /** the authenticated caller; set on `api` routes only. */
    principal: Principal;
    /**
     * Is the caller's credential still live (the token not revoked, the browser session not logged out)? Asked by
     * long-lived responses (SSE) before each event and every second, so revocation ends them at once.
     */
    stillAuthorised: () => boolean;
  };
}

export type HttpRouter = Hono<HttpEnv>;

export interface HttpRouters {
  /** routes that need an authenticated caller (token or login cookie); authentication runs before them. */
  api: HttpRouter;
  /** routes that check the request themselves or need no caller at all; nothing runs before them. */
  open: HttpRouter;
}

/** What a route module may use. */
export interface HttpContext {
  host: HostApi;
  mailbox: HttpMailbox;
  /** the open SSE streams, by conversation. */
  sse: SseHub;
  /** tokens, browser sessions and signed webhooks (central DB). */
  access: AccessStore;
  auth: TokenResolver;
  log: Logger;
}

/** Adds one area's routes. Called once when the channel starts, before it listens. */
export type HttpRouteModule = (routers: HttpRouters, context: HttpContext) => void;

export interface HttpChannelOptions {
  port: number;
  host: string;
  /** host names the server answers to besides IP literals and localhost (PINCER_HTTP_HOSTNAMES). */
  hostnames?: readonly string[];
  /** the admin token (the home's token file or PINCER_HTTP_TOKEN). */
  token: string;
  mailbox: HttpMailbox;
  /** the other tokens, browser sessions and signed webhooks, in the central DB. */
  access: AccessStore;
  log: Logger;
  /** unread bytes an SSE stream may have before the client is disconnected (default 1 MiB). */
  sseMaxBufferedBytes?: number;
  /** more areas to serve, after the built-in ones (see `routes/index.ts`). */
  routes?: HttpRouteModule[];
}

/** Who a token stands for (the channel's authenticator; routes that log a caller in use it). */
export interface TokenResolver {
  byToken(token: string): Principal | undefined;
}
