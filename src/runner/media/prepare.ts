import fs from 'node:fs';
import path from 'node:path';
import type { Attachment } from '../../db/content.js';
import type { ContentBlock } from '../../providers/types.js';
import { acquireBytes, mb } from './acquire.js';
import { safeFileName, uniqueName, withExtension } from './names.js';
import { MAX_BYTES, MAX_NATIVE_BYTES, NATIVE_IMAGE_MIME, type MediaKind, type MediaOptions, type SavedAttachment } from './types.js';

/**
 * Inbound media: every attachment is saved under `downloads/<message-id>/<safe-name>` with its type
 * detected from the bytes; the core then decides, by what the provider accepts, whether it becomes a native content
 * block or a `[file available at: …]` line in the message. Providers only build their own format from the blocks.
 */
export interface PreparedMedia {
  /** lines to add to the message text, in attachment order. */
  notes: string[];
  /** native content blocks for the prompt (only images/PDFs the provider accepts). */
  blocks: ContentBlock[];
  saved: SavedAttachment[];
}

export async function prepareAttachments(messageId: string, attachments: Attachment[], options: MediaOptions): Promise<PreparedMedia> {
  const result: PreparedMedia = { notes: [], blocks: [], saved: [] };
  const dir = path.join(options.root, 'downloads', safeFileName(messageId, 'message'));
  for (const attachment of attachments) {
    const saved = await saveAttachment(attachment, dir, options);
    result.saved.push(saved);
    if (!saved.ok) {
      result.notes.push(`[attachment "${saved.name}" not available: ${saved.reason}]`);
      continue;
    }
    if (saved.native) {
      const data = options.codec ? (await options.codec.encodeFile(saved.path)).data : fs.readFileSync(saved.path).toString('base64');
      result.blocks.push(
        saved.kind === 'pdf'
          ? { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data } }
          : { type: 'image', source: { type: 'base64', media_type: saved.mime, data } },
      );
      result.notes.push(`[${saved.kind} attached: ${saved.name}, also at: ${saved.path}]`);
    } else {
      result.notes.push(`[file available at: ${saved.path}]`);
    }
  }
  return result;
}

async function saveAttachment(attachment: Attachment, dir: string, options: MediaOptions): Promise<SavedAttachment> {
  const name = safeFileName(attachment.name);
  const acquired = await acquireBytes(attachment, options.root, {
    timeoutMs: options.downloadTimeoutMs,
    allow: options.allowHosts,
    noNetwork: options.noNetwork,
    resolve: options.resolveHost,
  });
  if (!acquired.ok) return { ok: false, name, reason: acquired.reason };
  const { bytes } = acquired;
  // Loaded on first use: most runners never see an attachment, and the detector costs memory.
  const { fileTypeFromBuffer } = await import('file-type');
  const detected = await fileTypeFromBuffer(bytes);
  const mime = detected?.mime ?? (looksLikeText(bytes) ? 'text/plain' : 'application/octet-stream');
  const kind = kindOf(mime);
  if (bytes.length > MAX_BYTES[kind]) {
    return { ok: false, name, reason: `${mb(bytes.length)} is over the ${mb(MAX_BYTES[kind])} limit for ${kind} files` };
  }
  // Saved there already (a platform channel downloads into downloads/<message-id>/): used in place, not copied.
  const inPlace = attachment.localPath !== undefined && path.dirname(path.resolve(options.root, attachment.localPath)) === path.resolve(dir);
  let finalName: string;
  let file: string;
  if (inPlace) {
    file = path.resolve(options.root, attachment.localPath!);
    finalName = path.basename(file);
  } else {
    fs.mkdirSync(dir, { recursive: true });
    finalName = uniqueName(dir, withExtension(name, detected?.ext));
    file = path.join(dir, finalName);
    fs.writeFileSync(file, bytes, { flag: 'wx' });
  }
  const native =
    (kind === 'image' &&
      options.nativeMedia.includes('image') &&
      (NATIVE_IMAGE_MIME as readonly string[]).includes(mime) &&
      bytes.length <= MAX_NATIVE_BYTES.image) ||
    (kind === 'pdf' && options.nativeMedia.includes('pdf') && bytes.length <= MAX_NATIVE_BYTES.pdf);
  return { ok: true, name: finalName, path: file, kind, mime, size: bytes.length, native };
}

export function kindOf(mime: string): MediaKind {
  if (mime === 'application/pdf') return 'pdf';
  if (mime.startsWith('image/')) return 'image';
  if (mime.startsWith('audio/')) return 'audio';
  if (mime.startsWith('video/')) return 'video';
  return 'file';
}

/** No magic number: call it text when the first KiB decodes as UTF-8 without control bytes. */
function looksLikeText(bytes: Buffer): boolean {
  const head = bytes.subarray(0, 1024);
  // Control bytes other than tab, newline, carriage return and form feed mean binary.
  return !head.some((byte) => byte < 0x20 && byte !== 0x09 && byte !== 0x0a && byte !== 0x0d && byte !== 0x0c);
}
