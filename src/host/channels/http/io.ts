import type { Context } from 'hono';
import { HTTPException } from 'hono/http-exception';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { z } from 'zod';
import { describeIssues } from '../../../db/content.js';
import { errorMessage, type Logger } from '../../../shared/log.js';
import { DISK_FULL_MESSAGE, DISK_FULL_RETRY_AFTER_S, isDiskFull } from '../../errors.js';
import { isPincerError, PincerError } from '../../../shared/errors.js';
import { httpReply } from '../../../shared/error-edges.js';

/**
 * Request and response helpers of the HTTP channel: reading a JSON body with a size limit, validating it with zod,
 * and turning any thrown error into a JSON error response (`{ error, field?, code? }`) with the right status.
 */

export const MAX_BODY_BYTES = 1024 * 1024;
/** Deepest nesting of arrays and objects a JSON body may have (deeper ones are refused before anything walks them). */
export const MAX_JSON_DEPTH = 64;
const CONVERSATION_ID = /^[A-Za-z0-9._:@-]{1,128}$/;

/** The raw request body, refused with 413 past `MAX_BODY_BYTES` (counted as it arrives, not from Content-Length). */
export async function readBody(c: Context): Promise<Buffer> {
  const body = c.req.raw.body;
  if (!body) return Buffer.alloc(0);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new PincerError('too-large', `body larger than ${MAX_BODY_BYTES} bytes`);
    chunks.push(Buffer.from(chunk));
  }
  return Buffer.concat(chunks);
}

/** Parse a body as JSON: 400 when it is empty or not JSON. */
export function parseJson(raw: Buffer): unknown {
  const text = raw.toString('utf8');
  if (text.trim() === '') throw new PincerError('invalid-input', 'empty body: send a JSON object');
  const depth = jsonDepth(text);
  if (depth > MAX_JSON_DEPTH) throw new PincerError('invalid-input', `JSON body nested ${depth} levels deep: at most ${MAX_JSON_DEPTH} allowed`);
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new PincerError('invalid-input', `invalid JSON body: ${errorMessage(err)}`);
  }
}

/** How deep arrays and objects nest in JSON text, counted without parsing it (brackets inside strings do not count). */
function jsonDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (inString) {
      if (ch === 0x5c)
        i++; // backslash: skip the escaped character
      else if (ch === 0x22) inString = false;
    } else if (ch === 0x22) inString = true;
    else if (ch === 0x7b || ch === 0x5b) max = Math.max(max, ++depth);
    else if (ch === 0x7d || ch === 0x5d) depth--;
  }
  return max;
}

export async function readJson(c: Context): Promise<unknown> {
  return parseJson(await readBody(c));
}

/** Validate a body: 400 naming the first wrong field. */
export function validate<T>(schema: z.ZodType<T>, body: unknown): T {
  const parsed = schema.safeParse(body);
  if (!parsed.success) {
    const field = parsed.error.issues[0]?.path.join('.') || undefined;
    throw new PincerError('invalid-input', `invalid body: ${describeIssues(parsed.error)}`, { field });
  }
  return parsed.data;
}

/** A conversation id from the path or query: 400 unless it is 1–128 of A-Z a-z 0-9 . _ : @ -. */
export function conversationId(value: string): string {
  if (!CONVERSATION_ID.test(value))
    throw new PincerError('invalid-input', `conversation id "${value}": use 1–128 of A-Z a-z 0-9 . _ : @ -`, { field: 'conversation' });
  return value;
}

/** An event id to replay after (`?after=`, `Last-Event-ID`): 0 unless a non-negative integer. */
export function afterParam(value: string | null | undefined): number {
  const n = Number(value ?? 0);
  return Number.isInteger(n) && n >= 0 ? n : 0;
}

/**
 * The JSON error response for anything a route threw, from the one table (`httpReply`): `{error, code, field?}` with
 * the code's status. A full disk is refused with a reason and a time to try again (nothing was stored, so nothing is
 * lost); Hono's own `HTTPException` keeps its response; anything else is logged and answered 500.
 */
export function errorResponse(c: Context, err: unknown, log: Logger): Response {
  if (err instanceof HTTPException) return err.getResponse();
  if (isDiskFull(err)) {
    log.warn(`http: refused, the disk is full (${errorMessage(err)})`);
    err = new PincerError('disk-full', DISK_FULL_MESSAGE, { retryAfterS: DISK_FULL_RETRY_AFTER_S, cause: err });
  } else if (!isPincerError(err)) log.error(`http: ${errorMessage(err)}`);
  const reply = httpReply(err);
  for (const [name, value] of Object.entries(reply.headers)) c.header(name, value);
  return c.json(reply.body, reply.status as ContentfulStatusCode);
}
