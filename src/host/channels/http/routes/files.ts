import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import { canSee } from '../auth.js';
import { isUntrustedPathError, openOutboxFile } from '../../../untrusted-files.js';
import { HttpError } from '../io.js';
import type { HttpRouteModule } from '../types.js';

/**
 * Files the agent sent: `GET /v1/files/<event id>/<index>`, by the mailbox event that carried them (never by path),
 * opened without following a link (untrusted-files.ts).
 */
export const fileRoutes: HttpRouteModule = ({ api }, { mailbox, log }) => {
  api.get('/v1/files/:event/:index', (c) => {
    const eventId = c.req.param('event');
    const index = c.req.param('index');
    const event = mailbox.get(Number(eventId));
    const file = event && canSee(c.get('principal'), 'http', event.conversation) ? event.files[Number(index)] : undefined;
    if (!file) throw new HttpError(404, `no file ${eventId}/${index}`);
    let fd: number;
    try {
      fd = openOutboxFile(file); // the agent may have swapped it for a link since delivery
    } catch (err) {
      if (!isUntrustedPathError(err)) throw err;
      log.warn(`http: file ${eventId}/${index} refused: ${err.message}`);
      throw new HttpError(404, `no file ${eventId}/${index} (${err.code === 'missing' ? 'it is gone' : 'refused: not a regular file in the outbox'})`);
    }
    const body = Readable.toWeb(fs.createReadStream('', { fd })) as NodeReadableStream<Uint8Array>;
    return new Response(body as unknown as ReadableStream<Uint8Array>, {
      headers: { 'Content-Type': 'application/octet-stream', 'Content-Disposition': `attachment; filename="${path.basename(file).replace(/"/g, '')}"` },
    });
  });
};
