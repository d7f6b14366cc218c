import type Database from 'better-sqlite3';
import { isoNow } from '../shared/time.js';
import { prepared } from './connection.js';
import type { RoutingContext } from './types.js';

/**
 * `tool_activity`: which tool the runner's agent is running, so the host (and through it the terminal, the HTTP
 * channel's streams and the web page) can show it live. The runner writes one row when a tool call starts and sets
 * its end when it finishes; nothing acts on these rows, they are only shown.
 *
 * Everything in a row comes from the agent (a tool's name, its arguments), and the session database is the agent's to
 * write: the writer clamps and cleans what it stores, and the reader clamps and cleans again what it reads, so a
 * hostile row can neither grow a listing without bound nor put escape sequences on a user's terminal.
 */
export type ToolStatus = 'running' | 'ok' | 'error';

export interface ToolActivity {
  /** the row's id: increasing, what a reader compares to tell new rows from seen ones. */
  id: number;
  /** the provider's id of the call (unique within a query), at most `MAX_CALL_ID` characters. */
  callId: string;
  /** the tool's name (`bash`, `mcp__pincer__send_message`), cleaned, at most `MAX_NAME` characters. */
  name: string;
  /** a short preview of its arguments (`ls -la`, `src/app.ts`), cleaned, at most `MAX_PREVIEW` characters. */
  preview: string;
  status: ToolStatus;
  /** ISO times; `endedAt` is null while it runs. */
  startedAt: string;
  endedAt: string | null;
  /** the conversation of the batch the call ran for. */
  routing: { channel_type: string | null; platform_id: string | null; thread_id: string | null };
}

export const MAX_NAME = 64;
export const MAX_PREVIEW = 120;
const MAX_CALL_ID = 100;
/** routing values and times are short ids; anything longer is not one (the reader drops such a row). */
const MAX_FIELD = 200;
/** the runner keeps this many rows (the newest); older ones are deleted as new calls start. */
const KEEP_ROWS = 200;
/** a reader gets at most this many rows, the newest. */
export const READ_LIMIT = 20;

/** Argument keys worth showing first, in this order: what most tools' one important argument is called. */
const PREVIEW_KEYS = ['command', 'cmd', 'path', 'file_path', 'filePath', 'file', 'pattern', 'query', 'url', 'text', 'code', 'name'];

/**
 * Text made safe to print on one terminal line: escape sequences removed whole, other control characters (C0, DEL,
 * C1), bidirectional overrides and line/paragraph separators replaced by a space, runs of white space collapsed,
 * and cut to `max` characters (code points, so a surrogate pair is never split) with `…` when cut.
 */
export function cleanText(text: string, max: number): string {
  // only the start can be shown: a huge text is not scanned whole
  const cleaned = text
    .slice(0, max * 8)
    // CSI (ESC [ … final), OSC (ESC ] … BEL or ESC \), and any other two-character escape: control characters are the point
    // eslint-disable-next-line no-control-regex
    .replace(/\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]?/g, '')
    // eslint-disable-next-line no-control-regex
    .replace(/[\u0000-\u001f\u007f-\u009f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
  const chars = [...cleaned];
  return chars.length <= max ? cleaned : `${chars.slice(0, max - 1).join('')}…`;
}

/** A one-line preview of a tool's arguments: its main argument when it has one of the usual names, else compact JSON. */
export function previewArgs(args: unknown): string {
  if (args === undefined || args === null) return '';
  if (typeof args === 'string') return cleanText(args, MAX_PREVIEW);
  if (typeof args !== 'object') return cleanText(String(args), MAX_PREVIEW);
  const record = args as Record<string, unknown>;
  for (const key of PREVIEW_KEYS) {
    const value = record[key];
    if (typeof value === 'string' && value.trim() !== '') return cleanText(value, MAX_PREVIEW);
  }
  let json: string;
  try {
    // only the start is shown: a huge argument is not serialised whole
    json = JSON.stringify(args, (_key, value: unknown) => (typeof value === 'string' && value.length > MAX_PREVIEW ? value.slice(0, MAX_PREVIEW) : value));
  } catch {
    return ''; // a cycle or a BigInt: nothing worth showing
  }
  return json === '{}' ? '' : cleanText(json ?? '', MAX_PREVIEW);
}

/** A tool call started (the runner, for the batch in flight); older rows past `KEEP_ROWS` go. */
export function recordToolStart(db: Database.Database, call: { callId: string; name: string; args: unknown }, routing: RoutingContext | null): void {
  db.transaction(() => {
    prepared(
      db,
      `INSERT INTO tool_activity (call_id, name, preview, status, started_at, channel_type, platform_id, thread_id)
       VALUES (?, ?, ?, 'running', ?, ?, ?, ?)`,
    ).run(
      call.callId.slice(0, MAX_CALL_ID),
      cleanText(call.name, MAX_NAME) || 'tool',
      previewArgs(call.args),
      isoNow(),
      routing?.channelType ?? null,
      routing?.platformId ?? null,
      routing?.threadId ?? null,
    );
    prepared(db, 'DELETE FROM tool_activity WHERE id <= (SELECT max(id) FROM tool_activity) - ?').run(KEEP_ROWS);
  })();
}

/** A tool call finished: the newest running row of this call id gets its end and outcome. */
export function recordToolEnd(db: Database.Database, callId: string, ok: boolean): void {
  prepared(
    db,
    `UPDATE tool_activity SET status = ?, ended_at = ?
     WHERE id = (SELECT max(id) FROM tool_activity WHERE call_id = ? AND status = 'running')`,
  ).run(ok ? 'ok' : 'error', isoNow(), callId.slice(0, MAX_CALL_ID));
}

/** A new runner starts: calls an earlier one left running never finish (it ended mid-call), so they failed. */
export function endAbandonedTools(db: Database.Database): void {
  prepared(db, `UPDATE tool_activity SET status = 'error', ended_at = ? WHERE status = 'running'`).run(isoNow());
}

/** How long the call took (to its end, or so far while it runs); null when a time cannot be read. */
export function durationMs(activity: Pick<ToolActivity, 'startedAt' | 'endedAt'>, now = Date.now()): number | null {
  const start = Date.parse(activity.startedAt);
  const end = activity.endedAt === null ? now : Date.parse(activity.endedAt);
  return Number.isFinite(start) && Number.isFinite(end) ? Math.max(0, end - start) : null;
}

interface ToolActivityRow {
  id: unknown;
  call_id: unknown;
  name: unknown;
  preview: unknown;
  status: unknown;
  started_at: unknown;
  ended_at: unknown;
  channel_type: unknown;
  platform_id: unknown;
  thread_id: unknown;
}

/**
 * The newest rows (at most `READ_LIMIT`), oldest first, as a reader on the host's side may show them: values are
 * cut in SQL before they are read into memory, a row that is not well-formed (a status that is none of the three,
 * a value that is not text) is left out, and text is cleaned again.
 */
export function recentToolActivity(db: Database.Database): ToolActivity[] {
  const rows = prepared(
    db,
    `SELECT id, substr(CAST(call_id AS TEXT), 1, ${MAX_CALL_ID}) AS call_id, substr(CAST(name AS TEXT), 1, ${MAX_NAME * 2}) AS name,
       substr(CAST(preview AS TEXT), 1, ${MAX_PREVIEW * 2}) AS preview, substr(CAST(status AS TEXT), 1, 10) AS status,
       substr(CAST(started_at AS TEXT), 1, ${MAX_FIELD + 1}) AS started_at, substr(CAST(ended_at AS TEXT), 1, ${MAX_FIELD + 1}) AS ended_at,
       substr(CAST(channel_type AS TEXT), 1, ${MAX_FIELD + 1}) AS channel_type, substr(CAST(platform_id AS TEXT), 1, ${MAX_FIELD + 1}) AS platform_id,
       substr(CAST(thread_id AS TEXT), 1, ${MAX_FIELD + 1}) AS thread_id
     FROM tool_activity ORDER BY id DESC LIMIT ${READ_LIMIT}`,
  ).all() as ToolActivityRow[];
  return rows
    .flatMap((row) => {
      const parsed = parseRow(row);
      return parsed ? [parsed] : [];
    })
    .reverse();
}

function parseRow(row: ToolActivityRow): ToolActivity | undefined {
  const { id, call_id: callId, name, preview, status, started_at: startedAt, ended_at: endedAt } = row;
  if (typeof id !== 'number' || !Number.isSafeInteger(id)) return undefined;
  if (typeof callId !== 'string' || typeof name !== 'string' || typeof preview !== 'string') return undefined;
  if (status !== 'running' && status !== 'ok' && status !== 'error') return undefined;
  if (!isShort(startedAt) || !(endedAt === null || isShort(endedAt))) return undefined;
  const routing = { channel_type: row.channel_type, platform_id: row.platform_id, thread_id: row.thread_id };
  if (!Object.values(routing).every((v) => v === null || isShort(v))) return undefined;
  return {
    id,
    callId,
    name: cleanText(name, MAX_NAME) || 'tool',
    preview: cleanText(preview, MAX_PREVIEW),
    status,
    startedAt,
    endedAt,
    routing: routing as ToolActivity['routing'],
  };
}

function isShort(value: unknown): value is string {
  return typeof value === 'string' && value.length <= MAX_FIELD;
}
