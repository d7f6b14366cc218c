import { errorMessage } from '../../shared/log.js';
import { readBody } from '../channels/http/io.js';
import { PincerError } from '../../shared/errors.js';
import type { HttpRouteModule } from '../channels/http/types.js';

/**
 * `POST /webhooks/<platform>` (and `GET`, which WhatsApp uses to verify the URL) on the host's HTTP listener. No
 * bearer token here (an `open` route): each platform proves itself the way it signs (Slack's signing secret,
 * Discord's Ed25519, WhatsApp's and GitHub's HMAC, Telegram's secret token), checked by the platform's adapter
 * before anything is stored; a bad signature is answered 401 and nothing is written.
 */
export interface WebhookTarget {
  readonly type: string;
  webhook(request: Request): Promise<Response>;
}

export function platformWebhookRoutes(targets: readonly WebhookTarget[]): HttpRouteModule {
  const byName = new Map(targets.map((t) => [t.type, t]));
  return ({ open }, { log }) => {
    open.on(['GET', 'POST'], '/webhooks/:platform', async (c) => {
      const platform = c.req.param('platform');
      const target = byName.get(platform);
      if (!target) {
        const known = [...byName.keys()];
        throw new PincerError('not-found', `no platform "${platform}" on this host (enabled: ${known.length > 0 ? known.join(', ') : 'none'})`);
      }
      // The body is read here, within the size limit, and handed on whole: signatures cover the exact bytes.
      const body = c.req.method === 'POST' ? await readBody(c) : undefined;
      const request = new Request(c.req.url, { method: c.req.method, headers: c.req.raw.headers, ...(body ? { body } : {}) });
      let response: Response;
      try {
        response = await target.webhook(request);
      } catch (err) {
        log.error(`webhook ${platform}: ${errorMessage(err)}`);
        throw err;
      }
      if (response.status === 401 || response.status === 403) log.warn(`webhook ${platform}: refused (${response.status}): bad or missing signature`);
      return response;
    });
  };
}
