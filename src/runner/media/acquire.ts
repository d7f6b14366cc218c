import fs from 'node:fs';
import type http from 'node:http';
import path from 'node:path';
import type { Attachment } from '../../db/content.js';
import { errorMessage } from '../../shared/log.js';
import {
  ANYWHERE,
  guardedLookup,
  nameAllowed,
  REFUSAL_HINT,
  RefusedTargetError,
  refusedAddress,
  unbracket,
  type DownloadAllowList,
  type ResolveHost,
} from './download-targets.js';
import { MAX_DOWNLOAD_BYTES } from './types.js';

/**
 * The bytes of an inbound attachment, from whichever source it came with: base64 `data`, an http(s) `url` (with a
 * timeout, a size cap while streaming, and only to targets that download-targets.ts allows, on every redirect hop),
 * or a `localPath` that must resolve — after symlinks — inside the session folder. Failures come back as a reason for
 * the prompt, never as an exception.
 */
export type Acquired = { ok: true; bytes: Buffer } | { ok: false; reason: string };

/** How URL downloads are made: their timeout, where they may connect, and (for tests) how names resolve. */
export interface UrlOptions {
  timeoutMs: number;
  allow: DownloadAllowList;
  /** in a sandbox without a network: the setting that gives it one (see sandbox-network.ts). */
  noNetwork?: string;
  resolve?: ResolveHost;
}

export async function acquireBytes(attachment: Attachment, root: string, url: UrlOptions): Promise<Acquired> {
  if (attachment.data !== undefined) return fromBase64(attachment.data);
  if (attachment.localPath !== undefined) return fromLocalPath(attachment.localPath, root);
  if (attachment.url !== undefined) return fromUrl(attachment.url, url);
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
    // the reason says what is missing
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

/** Redirects followed before a download is given up (each hop is checked like the first URL). */
export const MAX_REDIRECTS = 5;
const REDIRECT_STATUS = new Set([301, 302, 303, 307, 308]);

/**
 * Download with node:http(s) rather than fetch: redirects are followed here, one hop at a time, so that every hop's
 * target is checked, and the connection's `lookup` is the guarded one, so the checked address is the connected one.
 */
async function fromUrl(url: string, options: UrlOptions): Promise<Acquired> {
  let current: URL;
  try {
    current = new URL(url);
  } catch {
    // the reason says what is wrong
    return { ok: false, reason: 'its url is not a URL' };
  }
  const signal = AbortSignal.timeout(options.timeoutMs);
  let hop = 0;
  // `name` is the host name when the address came from resolving it.
  const refused = (address: string, kind: string, name?: string): Acquired => {
    let what: string;
    if (hop > 0) what = `it redirected to ${name === undefined ? address : `${name}, which resolves to ${address}`}, ${kind}`;
    else if (name === undefined) what = `${address} is ${kind}`;
    else what = `${name} resolves to ${address}, ${kind}`;
    return { ok: false, reason: `the download was refused: ${what}; ${REFUSAL_HINT}` };
  };
  try {
    for (; ; hop++) {
      if (current.protocol !== 'http:' && current.protocol !== 'https:') {
        return { ok: false, reason: hop > 0 ? `it redirected to a ${current.protocol} url` : `its url scheme ${current.protocol} is not http or https` };
      }
      const literal = unbracket(current.hostname);
      const kind = (await import('node:net')).isIP(literal) && !nameAllowed(literal, options.allow) ? refusedAddress(literal, options.allow) : undefined;
      if (kind) return refused(literal, kind);
      const response = await get(current, options, signal);
      const location = response.headers.location;
      if (!REDIRECT_STATUS.has(response.statusCode ?? 0) || location === undefined) return await readBody(response);
      response.destroy();
      if (hop >= MAX_REDIRECTS) return { ok: false, reason: `it redirected more than ${MAX_REDIRECTS} times` };
      current = new URL(location, current);
    }
  } catch (err) {
    if (err instanceof RefusedTargetError) return refused(err.address, err.kind, err.hostname);
    const failed = signal.aborted ? `the download timed out after ${options.timeoutMs} ms` : `the download failed: ${causeOf(err)}`;
    // Nothing but loopback can answer inside such a sandbox: say why, and what lets the runner download.
    const hint = options.noNetwork ? `; the runner's sandbox has no network (${options.noNetwork} gives it one; or send the file's bytes as data)` : '';
    return { ok: false, reason: failed + hint };
  }
}

async function get(url: URL, options: UrlOptions, signal: AbortSignal): Promise<http.IncomingMessage> {
  // Loaded on the first download: most runners never fetch an attachment, and idle memory counts.
  const client = url.protocol === 'https:' ? await import('node:https') : await import('node:http');
  // A name the setting allows may resolve anywhere; every other name goes through the guarded lookup.
  const lookup = guardedLookup(nameAllowed(url.hostname, options.allow) ? ANYWHERE : options.allow, options.resolve);
  return new Promise((resolve, reject) => {
    client.get(url, { agent: false, signal, lookup, headers: { 'user-agent': 'pincer' } }, resolve).on('error', reject);
  });
}

async function readBody(response: http.IncomingMessage): Promise<Acquired> {
  const status = response.statusCode ?? 0;
  if (status < 200 || status > 299) {
    response.destroy();
    return { ok: false, reason: `the download failed: HTTP ${status}` };
  }
  const declared = Number(response.headers['content-length'] ?? 0);
  if (declared > MAX_DOWNLOAD_BYTES) {
    response.destroy();
    return tooBig(declared);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of response as AsyncIterable<Buffer>) {
    size += chunk.byteLength;
    if (size > MAX_DOWNLOAD_BYTES) {
      response.destroy();
      return tooBig(size);
    }
    chunks.push(chunk);
  }
  return { ok: true, bytes: Buffer.concat(chunks) };
}

function causeOf(err: unknown): string {
  const cause = err instanceof Error && err.cause instanceof Error ? err.cause.message : undefined;
  return cause ?? errorMessage(err);
}

function tooBig(size: number): Acquired {
  return { ok: false, reason: `it is larger than the ${mb(MAX_DOWNLOAD_BYTES)} download limit (${mb(size)} or more)` };
}

/** A file's size for a person: `17 bytes`, `3.4 KB`, `21.0 MB` (a small file is never `0.0 MB`). */
export function mb(bytes: number): string {
  if (bytes < 1024) return `${bytes} byte${bytes === 1 ? '' : 's'}`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}
