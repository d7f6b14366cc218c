import type http from 'node:http';
import { errorMessage, type Logger } from '../../shared/log.js';

/**
 * `POST /webhooks/<platform>` (and `GET`, which WhatsApp uses to verify the URL) on the host's HTTP listener. No
 * bearer token here: each platform proves itself the way it signs (Slack's signing secret, Discord's Ed25519,
 * WhatsApp's and GitHub's HMAC, Telegram's secret token), checked by the platform's adapter before anything is
 * stored; a bad signature is answered 401 and nothing is written.
 */
export interface WebhookTarget {
  readonly type: string;
  webhook(request: Request): Promise<Response>;
}

/** Platform payloads are small (GitHub caps its webhooks at 25 MB; chat events are a few KiB). */
const MAX_WEBHOOK_BYTES = 5 * 1024 * 1024;
const PATH = /^\/webhooks\/([a-z]+)\/?$/;

export class PlatformWebhooks {
  private readonly targets: Map<string, WebhookTarget>;

  constructor(
    targets: readonly WebhookTarget[],
    private readonly log: Logger,
  ) {
    this.targets = new Map(targets.map((t) => [t.type, t]));
  }

  /** Whether a request is for this route (then `handle` answers it). */
  matches(req: http.IncomingMessage): boolean {
    const pathname = new URL(req.url ?? '/', 'http://localhost').pathname;
    return (req.method === 'POST' || req.method === 'GET') && PATH.test(pathname);
  }

  async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const platform = PATH.exec(url.pathname)?.[1] ?? '';
    const target = this.targets.get(platform);
    if (!target) {
      const known = [...this.targets.keys()];
      return text(res, 404, `no platform "${platform}" on this host (enabled: ${known.length > 0 ? known.join(', ') : 'none'})`);
    }
    let body: Buffer | undefined;
    if (req.method === 'POST') {
      body = await readBody(req);
      if (!body) return text(res, 413, `webhook body larger than ${MAX_WEBHOOK_BYTES} bytes`);
    }
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) {
      if (value === undefined) continue;
      for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
    }
    const request = new Request(new URL(url.pathname + url.search, `http://${req.headers.host ?? 'localhost'}`), {
      method: req.method,
      headers,
      ...(body ? { body } : {}),
    });
    let response: Response;
    try {
      response = await target.webhook(request);
    } catch (err) {
      this.log.error(`webhook ${platform}: ${errorMessage(err)}`);
      return text(res, 500, 'internal error');
    }
    if (response.status === 401 || response.status === 403) this.log.warn(`webhook ${platform}: refused (${response.status}): bad or missing signature`);
    res.writeHead(response.status, Object.fromEntries(response.headers.entries()));
    res.end(Buffer.from(await response.arrayBuffer()));
  }
}

async function readBody(req: http.IncomingMessage): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_WEBHOOK_BYTES) return undefined;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

function text(res: http.ServerResponse, status: number, body: string): void {
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8' });
  res.end(body);
}
