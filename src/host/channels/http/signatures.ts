import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Signature checks of signed webhooks: HMAC-SHA256 of the raw body with a secret shared with the sender, in the form
 * each sender uses. Every function returns null when the request is genuine, else why not (for the 401's message,
 * which names what is wrong but never the expected value).
 */

export type WebhookScheme = 'github' | 'hmac' | 'stripe';
export const WEBHOOK_SCHEMES: readonly WebhookScheme[] = ['github', 'hmac', 'stripe'];
/** the generic scheme's header unless configured otherwise. */
export const DEFAULT_HMAC_HEADER = 'X-Signature-256';
/** how old (or how far ahead) a Stripe-style timestamp may be. */
export const DEFAULT_TOLERANCE_S = 300;

export interface SignedRequest {
  body: Buffer;
  header(name: string): string | undefined;
  /** seconds since the epoch, for timestamped signatures. */
  nowS: number;
}

export interface WebhookSecret {
  scheme: WebhookScheme;
  secret: string;
  /** generic scheme: the header carrying the signature. */
  header: string | null;
  /** Stripe-style: tolerance in seconds. */
  toleranceS: number | null;
}

export function checkSignature(hook: WebhookSecret, request: SignedRequest): string | null {
  switch (hook.scheme) {
    case 'github':
      return checkHexHeader(request.header('x-hub-signature-256'), 'X-Hub-Signature-256', hmac(hook.secret, request.body));
    case 'hmac': {
      const name = hook.header ?? DEFAULT_HMAC_HEADER;
      return checkHexHeader(request.header(name.toLowerCase()), name, hmac(hook.secret, request.body));
    }
    case 'stripe':
      return checkStripe(hook, request);
  }
}

/** GitHub and the generic scheme: `sha256=<hex>` (the generic one also takes the bare hex digest). */
function checkHexHeader(value: string | undefined, name: string, expected: Buffer): string | null {
  if (!value) return `missing ${name} header`;
  const hex = value.startsWith('sha256=') ? value.slice('sha256='.length) : value;
  if (!/^[0-9a-fA-F]{64}$/.test(hex)) return `${name} is not "sha256=" and 64 hex digits`;
  return same(Buffer.from(hex, 'hex'), expected) ? null : `${name} does not match the body (wrong secret, or the body was changed)`;
}

/** Stripe: `Stripe-Signature: t=<unix s>,v1=<hex>[,v1=…]`, signing `<t>.<body>`; the timestamp must be recent. */
function checkStripe(hook: WebhookSecret, request: SignedRequest): string | null {
  const value = request.header('stripe-signature');
  if (!value) return 'missing Stripe-Signature header';
  const parts = value.split(',').map((p) => p.trim().split('=') as [string, string?]);
  const t = parts.find(([k]) => k === 't')?.[1];
  const signatures = parts.filter(([k, v]) => k === 'v1' && v && /^[0-9a-fA-F]{64}$/.test(v)).map(([, v]) => Buffer.from(v!, 'hex'));
  if (!t || !/^\d+$/.test(t) || signatures.length === 0) return 'Stripe-Signature needs t=<unix seconds> and v1=<64 hex digits>';
  const tolerance = hook.toleranceS ?? DEFAULT_TOLERANCE_S;
  if (Math.abs(request.nowS - Number(t)) > tolerance) return `Stripe-Signature timestamp is more than ${tolerance} s from now (a replay, or a clock off)`;
  const expected = hmac(hook.secret, Buffer.concat([Buffer.from(`${t}.`), request.body]));
  return signatures.some((s) => same(s, expected)) ? null : 'Stripe-Signature does not match the body (wrong secret, or the body was changed)';
}

function hmac(secret: string, body: Buffer): Buffer {
  return createHmac('sha256', secret).update(body).digest();
}

function same(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}
