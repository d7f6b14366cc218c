import type Database from 'better-sqlite3';
import path from 'node:path';
import { runDoctor, sessionFoldersUnder } from '../doctor/report.js';
import { requireAdmin } from '../host/channels/http/auth.js';
import { AccessStore } from '../host/channels/http/access.js';
import { HttpChannel } from '../host/channels/http/channel.js';
import { HttpMailbox } from '../host/channels/http/mailbox.js';
import { mcpServerRoutes } from '../host/channels/http/routes/mcp-servers.js';
import { usageRoutes } from '../host/channels/http/routes/usage.js';
import type { HttpRouteModule } from '../host/channels/http/types.js';
import { CentralStore } from '../host/central-db/store.js';
import { HostMetrics } from '../host/metrics.js';
import type { PlatformChannel } from '../host/platforms/channel.js';
import { platformWebhookRoutes } from '../host/platforms/webhooks.js';
import type { HostConfig } from '../host/types.js';
import { Budgets } from '../host/usage/budgets.js';
import { UsageLedger } from '../host/usage/ledger.js';
import { PriceTable } from '../host/usage/prices.js';
import type { Logger } from '../shared/log.js';
import { problemLines, readableViews, renderReport } from './doctor.js';

/**
 * The host's HTTP channel with everything only it needs: hono and its Node server, the routes, and the Prometheus
 * metrics it serves on `/metrics` (prom-client). `pincer host` imports this module only with `--http`, so a host
 * without an HTTP listener (and `pincer chat`) never loads them.
 */
export interface HttpSetup {
  channel: HttpChannel;
  /** kept by the host from its start, served by the channel. */
  metrics: HostMetrics;
}

export function createHttpChannel(options: {
  http: NonNullable<HostConfig['http']>;
  home: string;
  token: string;
  db: Database.Database;
  platformChannels: PlatformChannel[];
  log: Logger;
}): HttpSetup {
  const { http, home, token, db, platformChannels, log } = options;
  const metrics = new HostMetrics();
  const routes = [
    usageRoutesFor(db, metrics, http.metricsToken, log),
    doctorRoutes(home),
    mcpServerRoutes(db),
    ...(platformChannels.length > 0 ? [platformWebhookRoutes(platformChannels)] : []),
  ];
  const channel = new HttpChannel({
    port: http.port,
    host: http.host,
    hostnames: http.hostnames,
    token,
    mailbox: new HttpMailbox(db),
    access: new AccessStore(db),
    log,
    routes,
    sseMaxBufferedBytes: http.sseMaxBufferedBytes,
  });
  return { channel, metrics };
}

/** `/v1/usage`, budgets and `/metrics`, on the HTTP channel's own connection to the central DB. */
function usageRoutesFor(db: Database.Database, metrics: HostMetrics, metricsToken: string | undefined, log: Logger): HttpRouteModule {
  const store = new CentralStore(db);
  // Only lists and changes budgets here: no pricing, so the built-in table will do.
  const budgets = new Budgets(db, new UsageLedger(db, new PriceTable(), log));
  return usageRoutes({ db, budgets, metrics, metricsToken, findGroup: (nameOrId) => store.findAgentGroup(nameOrId) });
}

/**
 * `GET /v1/doctor` on the host's HTTP API (the control page's Doctor view): the same report as `pincer doctor` for the
 * host's home, as text, with each session's provider and the reason it was chosen (admin token only). Made here, above the host, because
 * the report reads the host's records and the runner's configuration alike.
 */
export function doctorRoutes(home: string): HttpRouteModule {
  return ({ api }) => {
    api.get('/v1/doctor', (c) => {
      requireAdmin(c);
      const report = runDoctor(sessionFoldersUnder(home), process.env, home, readableViews(home));
      const sessions = report.sessions.map((s) => ({
        id: path.basename(s.dir),
        provider: s.selection?.ok ? s.selection.provider : null,
        reason: s.configError ?? (s.selection?.ok ? s.selection.reason : s.selection?.message) ?? null,
      }));
      return c.json({ text: renderReport(report, home), failures: report.failures, problems: problemLines(report), sessions });
    });
  };
}
