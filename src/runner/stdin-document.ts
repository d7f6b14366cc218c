import type { Readable } from 'node:stream';
import { describeIssues } from '../db/content.js';
import { MAX_STDIN_DOCUMENT_BYTES, StdinDocumentSchema, type StdinDocument } from '../shared/stdin-document.js';
import { PincerError } from '../shared/errors.js';

/** How long a runner waits for its launch document (the launcher writes it right after the spawn). */
const WAIT_MS = 30_000;

/** The launch document did not arrive whole: a launcher's or a host's fault, reported as bad configuration (exit 2). */
function documentError(message: string): PincerError {
  return new PincerError('config', message);
}

/**
 * The first line of `input` as the launch document (src/shared/stdin-document.ts). What follows the line is left
 * unread: the stream goes on as the runner's lifeline. The values are never logged; an error says only what was wrong.
 */
export function readStdinDocument(input: Readable, waitMs: number | null = WAIT_MS): Promise<StdinDocument> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    // null: wait as long as it takes (a spare runner waits for its session)
    const timer = waitMs === null ? undefined : setTimeout(() => finish(documentError(`no launch document on stdin within ${waitMs} ms`)), waitMs);
    const finish = (err: Error | null, document?: StdinDocument): void => {
      clearTimeout(timer);
      input.off('data', onData);
      input.off('end', onEnd);
      input.off('error', onError);
      input.pause();
      if (err) reject(err);
      else resolve(document!);
    };
    const onData = (chunk: Buffer): void => {
      const newline = chunk.indexOf(0x0a);
      const part = newline === -1 ? chunk : chunk.subarray(0, newline);
      chunks.push(part);
      size += part.length;
      if (size > MAX_STDIN_DOCUMENT_BYTES) return finish(documentError(`the launch document on stdin is over ${MAX_STDIN_DOCUMENT_BYTES} bytes`));
      if (newline === -1) return;
      // Whatever follows the line is not ours: put it back for the lifeline's reader (paused first, so that it is
      // not handed straight back to this listener).
      input.off('data', onData);
      input.pause();
      if (newline + 1 < chunk.length) input.unshift(chunk.subarray(newline + 1));
      let parsed: unknown;
      try {
        parsed = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        // JSON.parse's message would quote the text: it holds secrets.
        return finish(documentError('the launch document on stdin is not valid JSON'));
      }
      const document = StdinDocumentSchema.safeParse(parsed);
      if (!document.success) return finish(documentError(`invalid launch document on stdin: ${describeIssues(document.error)}`));
      finish(null, document.data);
    };
    const onEnd = (): void => finish(documentError('stdin closed before the launch document arrived'));
    const onError = (err: Error): void => finish(documentError(`cannot read the launch document on stdin: ${err.message}`));
    input.on('data', onData);
    input.once('end', onEnd);
    input.once('error', onError);
  });
}
