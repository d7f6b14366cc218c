import type { Attachment as ChatAttachment, Message } from 'chat';
import fs from 'node:fs';
import path from 'node:path';
import { safeFileName } from '../../runner/media/names.js';
import { mb } from '../../runner/media/acquire.js';
import { MAX_BYTES, type MediaKind } from '../../runner/media/types.js';
import { errorMessage } from '../../shared/log.js';
import type { TriggerRules } from '../central-db/types.js';
import type { ConversationRef } from '../types.js';

/**
 * A platform message as a `chat-sdk` row: the Chat SDK's serialized message (author, text, mention, reply-to,
 * attachments) without `raw` (the platform's whole payload, often with tokens or e-mail addresses of others), its
 * attachments downloaded into the session's `downloads/<row id>/` within the media limits, and whether it wakes the
 * agent by the group's rules.
 */
export interface Sender {
  /** `<platform>:<user id>`: the id admin lists and allow-lists use. */
  id: string;
  name: string;
}

/** A platform thread as a conversation: the chat is the platform id; a thread of it (not the chat itself) the thread. */
export function conversationOf(platform: string, thread: { id: string; channelId: string }): ConversationRef {
  return { channelType: platform, platformId: thread.channelId, threadId: thread.id === thread.channelId ? null : thread.id };
}

export function senderOf(platform: string, message: Message): Sender {
  return { id: `${platform}:${message.author.userId}`, name: message.author.fullName || message.author.userName || message.author.userId };
}

/** Whether the agent answers this message (`1`), only sees it with its next answer (`0`), or never sees it (`null`). */
export function triggerOf(rules: TriggerRules, sender: Sender, message: Message, isDM: boolean): 0 | 1 | null {
  if (rules.allowedUsers.length > 0 && !rules.allowedUsers.includes(sender.id)) return null;
  if (isDM || rules.groups === 'always') return 1;
  return message.isMention ? 1 : 0;
}

/** The serialized message without `raw`, also in the message it replies to. */
export function serializedContent(message: Message): Record<string, unknown> {
  const { raw: _raw, replyTo, attachments: _attachments, ...rest } = message.toJSON();
  const reply = replyTo ? (({ raw: _r, ...quoted }) => quoted)(replyTo) : undefined;
  return { ...rest, ...(reply ? { replyTo: reply } : {}) };
}

const KIND_OF: Record<string, MediaKind> = { image: 'image', video: 'video', audio: 'audio', file: 'file' };

/**
 * Download each attachment into `<folder>/downloads/<id>/`. The folder belongs to the agent: `downloads/` must be a
 * real directory (not a link the agent planted), the message folder is created fresh, and files are created with
 * O_EXCL | O_NOFOLLOW. An attachment over its kind's limit, or one that fails to download, is kept with `error`
 * saying why (the agent is told), never silently dropped.
 */
export async function saveAttachments(attachments: ChatAttachment[], folder: string, id: string): Promise<Record<string, unknown>[]> {
  if (attachments.length === 0) return [];
  const downloads = path.join(folder, 'downloads');
  const dir = path.join(downloads, id);
  let ready: string | null = null;
  try {
    const stat = fs.lstatSync(downloads);
    if (!stat.isDirectory()) ready = 'the session folder\'s downloads/ is not a directory';
    else fs.mkdirSync(dir, { mode: 0o755 });
  } catch (err) {
    ready = `downloads/ is not usable: ${errorMessage(err)}`;
  }
  const used = new Set<string>();
  const saved: Record<string, unknown>[] = [];
  for (const attachment of attachments) {
    const kind: MediaKind = attachment.mimeType === 'application/pdf' ? 'pdf' : (KIND_OF[attachment.type] ?? 'file');
    const name = uniqueIn(used, safeFileName(attachment.name ?? '', attachment.type));
    const described = {
      type: attachment.type,
      name,
      ...(attachment.mimeType ? { mimeType: attachment.mimeType } : {}),
      ...(attachment.size !== undefined ? { size: attachment.size } : {}),
    };
    const error = ready ?? (await download(attachment, kind, path.join(dir, name)));
    saved.push(error ? { ...described, error } : { ...described, localPath: `downloads/${id}/${name}` });
  }
  return saved;
}

async function download(attachment: ChatAttachment, kind: MediaKind, file: string): Promise<string | null> {
  const limit = MAX_BYTES[kind];
  if (attachment.size !== undefined && attachment.size > limit) return `${mb(attachment.size)} is over the ${mb(limit)} limit for ${kind} files`;
  if (!attachment.fetchData) return 'the platform offers no download for it';
  let bytes: Buffer;
  try {
    const data = await attachment.fetchData();
    bytes = Buffer.isBuffer(data) ? data : Buffer.from(data);
  } catch (err) {
    return `the download failed: ${errorMessage(err)}`;
  }
  if (bytes.length > limit) return `${mb(bytes.length)} is over the ${mb(limit)} limit for ${kind} files`;
  const fd = fs.openSync(file, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_NOFOLLOW, 0o644);
  try {
    fs.writeSync(fd, bytes);
  } finally {
    fs.closeSync(fd);
  }
  return null;
}

function uniqueIn(used: Set<string>, name: string): string {
  let candidate = name;
  for (let i = 2; used.has(candidate); i++) {
    const ext = path.extname(name);
    candidate = `${name.slice(0, name.length - ext.length)}-${i}${ext}`;
  }
  used.add(candidate);
  return candidate;
}
