import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import { HttpError } from '../io.js';
import type { HttpRouteModule } from '../types.js';

/**
 * Files the agent sent: `GET /v1/files/<event id>/<index>`, by the mailbox event that carried them (never by path).
 */
export const fileRoutes: HttpRouteModule = ({ api }, { mailbox }) => {
  api.get('/v1/files/:event/:index', (c) => {
    const eventId = c.req.param('event');
    const index = c.req.param('index');
    const file = mailbox.get(Number(eventId))?.files[Number(index)];
    if (!file || !fs.existsSync(file)) throw new HttpError(404, `no file ${eventId}/${index}`);
    const body = Readable.toWeb(fs.createReadStream(file)) as NodeReadableStream<Uint8Array>;
    return new Response(body as unknown as ReadableStream<Uint8Array>, {
      headers: { 'Content-Type': 'application/octet-stream', 'Content-Disposition': `attachment; filename="${path.basename(file).replace(/"/g, '')}"` },
    });
  });
};
