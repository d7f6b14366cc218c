import { getConnInfo } from '@hono/node-server/conninfo';
import type Database from 'better-sqlite3';
import type { Context, MiddlewareHandler } from 'hono';
import { timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import type { HostMetrics } from '../../../metrics.js';
import { BUDGET_PERIODS, BUDGET_UNITS, type Budgets } from '../../../usage/budgets.js';
import { usageReport } from '../../../usage/report.js';
import { readJson, validate } from '../io.js';
import { PincerError } from '../../../../shared/errors.js';
import type { HttpEnv, HttpRouteModule } from '../types.js';

/**
 * Usage and metrics over HTTP: `GET /v1/usage` (the same report as `pincer usage --json`), budgets
 * (`GET /v1/budgets`, `PUT /v1/budgets/{group}`), and `GET /metrics` for Prometheus. `/metrics` has its own
 * authentication: `Authorization: Bearer <PINCER_METRICS_TOKEN>` when that is set, else loopback callers only.
 * Built by whoever starts the HTTP channel, with the central DB and the host's metrics.
 */
export interface UsageRouteDeps {
  /** a connection to the central DB (reports read the ledger). */
  db: Database.Database;
  /** group ids by name or id (budgets are addressed by either). */
  findGroup(nameOrId: string): { id: string; name: string } | undefined;
  budgets: Budgets;
  metrics: HostMetrics;
  /** the metrics token; without one, `/metrics` answers loopback callers only. */
  metricsToken?: string;
}

const PutBudget = z.object({
  period: z.enum(BUDGET_PERIODS),
  unit: z.enum(BUDGET_UNITS),
  /** the new limit; null removes it. */
  amount: z.number().nonnegative().finite().nullable(),
});

export function usageRoutes(deps: UsageRouteDeps): HttpRouteModule {
  return ({ api, open }) => {
    // Count every request that reaches a route after this point (the API routes), by route pattern, not by path.
    open.use('*', async (c, next) => {
      await next();
      if (c.req.path === '/metrics') return;
      deps.metrics.httpRequests.inc({ method: c.req.method, route: c.req.routePath, status: String(c.res.status) });
    });

    open.get('/metrics', async (c) => {
      const refusal = metricsRefusal(c.req.header('authorization'), remoteAddress(c), deps.metricsToken);
      if (refusal) return c.json({ error: refusal }, 401);
      return c.body(await deps.metrics.text(), 200, { 'content-type': deps.metrics.contentType });
    });

    // Usage covers every conversation and budgets bind the whole group: admin tokens only.
    api.use('/v1/usage', requireAdmin);
    api.use('/v1/budgets', requireAdmin);
    api.use('/v1/budgets/*', requireAdmin);

    api.get('/v1/usage', (c) => c.json(usageReport(deps.db, { since: c.req.query('since'), by: c.req.query('by') })));

    api.get('/v1/budgets', (c) => {
      const budgets = deps.budgets.list().map((b) => ({ ...b, group: deps.findGroup(b.agentGroupId)?.name ?? b.agentGroupId }));
      return c.json({ budgets });
    });

    api.put('/v1/budgets/:group', async (c) => {
      const group = deps.findGroup(c.req.param('group'));
      if (!group) throw new PincerError('not-found', `no agent group "${c.req.param('group')}"`, { field: 'group' });
      const body = validate(PutBudget, await readJson(c));
      if (body.amount === null) deps.budgets.clear(group.id, body.period, body.unit);
      else deps.budgets.set(group.id, body.period, body.unit, body.amount);
      return c.json({ budgets: deps.budgets.list(group.id).map((b) => ({ ...b, group: group.name })) });
    });
  };
}

const requireAdmin: MiddlewareHandler<HttpEnv> = async (c, next) => {
  if (c.get('principal').kind !== 'admin') throw new PincerError('forbidden', 'usage and budgets need an admin token (pincer token create --admin)');
  await next();
};

function remoteAddress(c: Context): string | undefined {
  try {
    return getConnInfo(c).remote.address;
  } catch {
    // no socket address (an in-process request): treated as not loopback
    return undefined;
  }
}

/** Why a `/metrics` request is refused, or null when it may read. */
export function metricsRefusal(authorization: string | undefined, address: string | undefined, token: string | undefined): string | null {
  if (token) {
    const given = Buffer.from(/^Bearer (.+)$/.exec(authorization ?? '')?.[1] ?? '');
    const expected = Buffer.from(token);
    return given.length === expected.length && timingSafeEqual(given, expected)
      ? null
      : 'missing or wrong metrics token (Authorization: Bearer <PINCER_METRICS_TOKEN>)';
  }
  return isLoopback(address) ? null : 'metrics are served to loopback callers only; set PINCER_METRICS_TOKEN to scrape from elsewhere';
}

function isLoopback(address: string | undefined): boolean {
  if (!address) return false;
  const v4 = address.startsWith('::ffff:') ? address.slice(7) : address;
  return v4.startsWith('127.') || address === '::1';
}
