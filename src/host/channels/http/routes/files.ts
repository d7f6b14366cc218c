import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import { canSee } from '../auth.js';
import { isUntrustedPathError, openOutboxFile } from '../../../untrusted-files.js';
import { PincerError } from '../../../../shared/errors.js';
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
    if (!file) throw new PincerError('not-found', `no file ${eventId}/${index}`);
    let fd: number;
    try {
      fd = openOutboxFile(file); // the agent may have swapped it for a link since delivery
    } catch (err) {
      if (!isUntrustedPathError(err)) throw err;
      log.warn(`http: file ${eventId}/${index} refused: ${err.message}`);
      throw new PincerError(
        'not-found',
        `no file ${eventId}/${index} (${err.reason === 'missing' ? 'it is gone' : 'refused: not a regular file in the outbox'})`,
      );
    }
    const body = Readable.toWeb(fs.createReadStream('', { fd })) as NodeReadableStream<Uint8Array>;
    return new Response(body as unknown as ReadableStream<Uint8Array>, {
      headers: { 'Content-Type': 'application/octet-stream', 'Content-Disposition': contentDisposition(path.basename(file)) },
    });
  });
};

/**
 * `attachment` with the file's name (RFC 6266): an ASCII `filename` (anything else, quotes, backslashes and control
 * characters become `_`) for old clients, and the exact name as UTF-8 in `filename*`. A header may carry neither CR/LF
 * nor non-Latin-1 text: `报告.txt` or a name with a line break must not turn into a 500.
 */
export function contentDisposition(name: string): string {
  const ascii = name.replace(/[^\x20-\x7e]|["\\]/g, '_');
  const encoded = encodeURIComponent(name).replace(/['()*]/g, (ch) => `%${ch.charCodeAt(0).toString(16).toUpperCase()}`);
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encoded}`;
}
