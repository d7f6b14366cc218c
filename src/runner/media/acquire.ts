import fs from 'node:fs';
import path from 'node:path';
import type { Attachment } from '../../db/content.js';
import { errorMessage } from '../../shared/log.js';
import { MAX_DOWNLOAD_BYTES } from './types.js';

/**
 * The bytes of an inbound attachment, from whichever source it came with: base64 `data`, an http(s) `url` (with a
 * timeout and a size cap while streaming), or a `localPath` that must resolve — after symlinks — inside the session
 * folder. Failures come back as a reason for the prompt, never as an exception.
 */
export type Acquired = { ok: true; bytes: Buffer } | { ok: false; reason: string };

export async function acquireBytes(attachment: Attachment, root: string, timeoutMs: number): Promise<Acquired> {
  if (attachment.data !== undefined) return fromBase64(attachment.data);
  if (attachment.localPath !== undefined) return fromLocalPath(attachment.localPath, root);
  if (attachment.url !== undefined) return fromUrl(attachment.url, timeoutMs);
  return { ok: false, reason: 'it has no data, url or localPath' };
}

function fromBase64(data: string): Acquired {
  const compact = data.replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/_-]*={0,2}$/.test(compact)) return { ok: false, reason: 'its data is not valid base64' };
  if ((compact.length * 3) / 4 > MAX_DOWNLOAD_BYTES) return tooBig(Math.floor((compact.length * 3) / 4));
  return { ok: true, bytes: Buffer.from(compact, 'base64') };
}

function fromLocalPath(localPath: string, root: string): Acquired {
  let real: string;
  let realRoot: string;
  try {
    realRoot = fs.realpathSync(root);
    real = fs.realpathSync(path.resolve(root, localPath));
  } catch {
    return { ok: false, reason: `its localPath does not exist: ${localPath}` };
  }
  if (real !== realRoot && !real.startsWith(realRoot + path.sep)) {
    return { ok: false, reason: 'its localPath is outside the session folder' };
  }
  const stat = fs.statSync(real);
  if (!stat.isFile()) return { ok: false, reason: 'its localPath is not a file' };
  if (stat.size > MAX_DOWNLOAD_BYTES) return tooBig(stat.size);
  return { ok: true, bytes: fs.readFileSync(real) };
}

async function fromUrl(url: string, timeoutMs: number): Promise<Acquired> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { ok: false, reason: 'its url is not a URL' };
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    return { ok: false, reason: `its url scheme ${parsed.protocol} is not http or https` };
  }
  try {
    const response = await fetch(parsed, { signal: AbortSignal.timeout(timeoutMs), redirect: 'follow' });
    if (!response.ok || !response.body) {
      await response.body?.cancel();
      return { ok: false, reason: `the download failed: HTTP ${response.status}` };
    }
    const declared = Number(response.headers.get('content-length') ?? 0);
    if (declared > MAX_DOWNLOAD_BYTES) {
      await response.body.cancel();
      return tooBig(declared);
    }
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of response.body) {
      size += chunk.byteLength;
      if (size > MAX_DOWNLOAD_BYTES) return tooBig(size);
      chunks.push(Buffer.from(chunk));
    }
    return { ok: true, bytes: Buffer.concat(chunks) };
  } catch (err) {
    const timedOut = err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError');
    return {
      ok: false,
      reason: timedOut ? `the download timed out after ${timeoutMs} ms` : `the download failed: ${causeOf(err)}`,
    };
  }
}

function causeOf(err: unknown): string {
  const cause = err instanceof Error && err.cause instanceof Error ? err.cause.message : undefined;
  return cause ?? errorMessage(err);
}

function tooBig(size: number): Acquired {
  return { ok: false, reason: `it is larger than the ${mb(MAX_DOWNLOAD_BYTES)} download limit (${mb(size)} or more)` };
}

export function mb(bytes: number): string {
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}
