import type Database from 'better-sqlite3';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { prepared } from '../../../db/connection.js';
import { isoNow } from '../../../shared/time.js';
import { PincerError } from '../../../shared/errors.js';
import { WEBHOOK_SCHEMES, type WebhookScheme, type WebhookSecret } from './signatures.js';
import { webhookSourceProblem } from '../../../shared/names.js';
import { WebhookReplays } from './webhook-replays.js';

/**
 * Who may call the HTTP API, kept in the central DB: signed webhooks (their shared secrets, which HMAC checks need in
 * the clear), named tokens (the admin token of the home's token file, plus
 * tokens created with `pincer token`, each either admin or limited to named conversations) and the browser sessions
 * a token login opens. Only SHA-256 hashes of tokens and session ids are stored: a copy of the DB lets nobody in.
 * Every request looks its caller up again, so a revoked token (and every browser session opened with it) stops
 * working at once, even on a running host.
 */

/** The caller of a request: everything, or only the listed conversations of the HTTP channel. */
export type Principal = { kind: 'admin'; name: string } | { kind: 'scoped'; name: string; conversations: ReadonlySet<string> };

export interface TokenInfo {
  id: string;
  name: string;
  admin: boolean;
  conversations: string[];
  createdAt: string;
  revokedAt: string | null;
}

interface TokenRow {
  id: string;
  name: string;
  token_hash: string;
  admin: number;
  conversations: string;
  created_at: string;
  revoked_at: string | null;
}

/** A signed webhook: `POST /v1/webhooks/<name>` needs its signature instead of a token. */
export interface WebhookConfig extends WebhookSecret {
  name: string;
  /** the conversation its events go to (default `webhook-<name>`). */
  conversation: string | null;
  createdAt: string;
}

interface WebhookRow {
  name: string;
  scheme: string;
  secret: string;
  conversation: string | null;
  header: string | null;
  tolerance_s: number | null;
  created_at: string;
}

/** Browser sessions last this long after the login; then the page logs in again. */
export const BROWSER_SESSION_MS = 7 * 24 * 3600_000;
const TOKEN_NAME = /^[A-Za-z0-9._-]{1,64}$/;

export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

export class AccessStore {
  constructor(private readonly db: Database.Database) {}

  /** The deliveries of signed webhooks already accepted (replays refused; src/host/channels/http/webhook-replays.ts). */
  webhookReplays(): WebhookReplays {
    return new WebhookReplays(this.db);
  }

  /** A new token; its secret is returned once and never stored. */
  createToken(input: { name: string; admin: boolean; conversations: string[] }): { token: string; info: TokenInfo } {
    if (!TOKEN_NAME.test(input.name)) throw new PincerError('invalid-input', `token name "${input.name}": use 1–64 of A-Z a-z 0-9 . _ -`, { field: 'name' });
    if (!input.admin && input.conversations.length === 0) {
      throw new PincerError('invalid-input', 'a token needs --conversation ID (one or more) or --admin', { field: 'conversations' });
    }
    if (input.admin && input.conversations.length > 0) {
      throw new PincerError('invalid-input', 'an --admin token reaches every conversation: give --admin or --conversation, not both', {
        field: 'conversations',
      });
    }
    const existing = this.findToken(input.name);
    if (existing && !existing.revokedAt)
      throw new PincerError('invalid-input', `a token named "${input.name}" exists already (pincer token list)`, { field: 'name' });
    // A revoked token's name may be used again; the old row goes.
    if (existing) prepared(this.db, 'DELETE FROM http_tokens WHERE id = ?').run(existing.id);
    const token = `pincer_${randomBytes(24).toString('base64url')}`;
    const id = `tok-${randomUUID().slice(0, 8)}`;
    prepared(this.db, 'INSERT INTO http_tokens (id, name, token_hash, admin, conversations, created_at) VALUES (?, ?, ?, ?, ?, ?)').run(
      id,
      input.name,
      hashSecret(token),
      input.admin ? 1 : 0,
      JSON.stringify([...new Set(input.conversations)]),
      isoNow(),
    );
    return { token, info: this.findToken(input.name)! };
  }

  listTokens(): TokenInfo[] {
    return (prepared(this.db, 'SELECT * FROM http_tokens ORDER BY created_at, name').all() as TokenRow[]).map(toInfo);
  }

  /** Revoke by name or id; false when there is no such live token. Its browser sessions end with it. */
  revokeToken(nameOrId: string): boolean {
    const row = prepared(this.db, 'SELECT * FROM http_tokens WHERE (name = ? OR id = ?) AND revoked_at IS NULL').get(nameOrId, nameOrId) as
      TokenRow | undefined;
    if (!row) return false;
    this.db.transaction(() => {
      prepared(this.db, 'UPDATE http_tokens SET revoked_at = ? WHERE id = ?').run(isoNow(), row.id);
      prepared(this.db, 'DELETE FROM http_browser_sessions WHERE token_hash = ?').run(row.token_hash);
    })();
    return true;
  }

  /** The caller a token stands for, if it is a live token of this table. */
  principalOf(token: string): Principal | undefined {
    return this.principalOfHash(hashSecret(token));
  }

  /** Open a browser session for a token hash; returns the session id for the cookie (only its hash is kept). */
  openBrowserSession(tokenHash: string, now = Date.now()): { id: string; expiresAt: Date } {
    const id = randomBytes(32).toString('base64url');
    const expiresAt = new Date(now + BROWSER_SESSION_MS);
    prepared(this.db, 'DELETE FROM http_browser_sessions WHERE expires_at < ?').run(new Date(now).toISOString());
    prepared(this.db, 'INSERT INTO http_browser_sessions (id_hash, token_hash, created_at, expires_at) VALUES (?, ?, ?, ?)').run(
      hashSecret(id),
      tokenHash,
      new Date(now).toISOString(),
      expiresAt.toISOString(),
    );
    return { id, expiresAt };
  }

  /** The token hash behind a live browser session. */
  browserSessionToken(sessionId: string, now = Date.now()): string | undefined {
    const row = prepared(this.db, 'SELECT token_hash, expires_at FROM http_browser_sessions WHERE id_hash = ?').get(hashSecret(sessionId)) as
      { token_hash: string; expires_at: string } | undefined;
    return row && Date.parse(row.expires_at) > now ? row.token_hash : undefined;
  }

  closeBrowserSession(sessionId: string): void {
    prepared(this.db, 'DELETE FROM http_browser_sessions WHERE id_hash = ?').run(hashSecret(sessionId));
  }

  /** Configure a signed webhook (or replace the one of that name). */
  setWebhook(hook: Omit<WebhookConfig, 'createdAt'>): WebhookConfig {
    const badName = webhookSourceProblem(hook.name);
    if (badName) throw new PincerError('invalid-input', badName, { field: 'name' });
    if (!WEBHOOK_SCHEMES.includes(hook.scheme))
      throw new PincerError('invalid-input', `webhook scheme "${hook.scheme}" (known: ${WEBHOOK_SCHEMES.join(', ')})`, { field: 'scheme' });
    if (hook.secret.length < 8) throw new PincerError('invalid-input', 'webhook secret: at least 8 characters', { field: 'secret' });
    if (hook.conversation !== null && !/^[A-Za-z0-9._:@-]{1,128}$/.test(hook.conversation)) {
      throw new PincerError('invalid-input', `conversation id "${hook.conversation}": use 1–128 of A-Z a-z 0-9 . _ : @ -`, { field: 'conversation' });
    }
    prepared(
      this.db,
      `INSERT OR REPLACE INTO http_webhooks (name, scheme, secret, conversation, header, tolerance_s, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
    ).run(hook.name, hook.scheme, hook.secret, hook.conversation, hook.header, hook.toleranceS, isoNow());
    return this.getWebhook(hook.name)!;
  }

  getWebhook(name: string): WebhookConfig | undefined {
    const row = prepared(this.db, 'SELECT * FROM http_webhooks WHERE name = ?').get(name) as WebhookRow | undefined;
    return row && toWebhook(row);
  }

  listWebhooks(): WebhookConfig[] {
    return (prepared(this.db, 'SELECT * FROM http_webhooks ORDER BY name').all() as WebhookRow[]).map(toWebhook);
  }

  removeWebhook(name: string): boolean {
    return prepared(this.db, 'DELETE FROM http_webhooks WHERE name = ?').run(name).changes > 0;
  }

  principalOfHash(tokenHash: string): Principal | undefined {
    const row = prepared(this.db, 'SELECT * FROM http_tokens WHERE token_hash = ? AND revoked_at IS NULL').get(tokenHash) as TokenRow | undefined;
    if (!row) return undefined;
    const info = toInfo(row);
    return info.admin ? { kind: 'admin', name: info.name } : { kind: 'scoped', name: info.name, conversations: new Set(info.conversations) };
  }

  private findToken(name: string): TokenInfo | undefined {
    const row = prepared(this.db, 'SELECT * FROM http_tokens WHERE name = ?').get(name) as TokenRow | undefined;
    return row && toInfo(row);
  }
}

function toInfo(row: TokenRow): TokenInfo {
  return {
    id: row.id,
    name: row.name,
    admin: row.admin === 1,
    conversations: JSON.parse(row.conversations) as string[],
    createdAt: row.created_at,
    revokedAt: row.revoked_at,
  };
}

function toWebhook(row: WebhookRow): WebhookConfig {
  return {
    name: row.name,
    scheme: row.scheme as WebhookScheme,
    secret: row.secret,
    conversation: row.conversation,
    header: row.header,
    toleranceS: row.tolerance_s,
    createdAt: row.created_at,
  };
}
