import fs from 'node:fs';
import path from 'node:path';
import { mb } from '../runner/media/acquire.js';
import { safeFileName } from '../runner/media/names.js';
import { MAX_BYTES, type MediaKind } from '../runner/media/types.js';
import { errorMessage } from '../shared/log.js';
import { HeldDirectory, isUntrustedPathError } from './untrusted-files.js';

/**
 * Files that come with an inbound message — a chat platform's attachments, a file attached in `pincer chat` — saved
 * into the session's `downloads/<row id>/` by the host, before the row is written, within the media limits. The
 * runner then treats them like any attachment with a `localPath`.
 */
export interface IncomingFile {
  type: 'image' | 'video' | 'audio' | 'file';
  name?: string;
  mimeType?: string;
  size?: number;
  /** the bytes; missing: the source offers no download. */
  fetchData?: () => Promise<Buffer | ArrayBuffer>;
}

const KIND_OF: Record<string, MediaKind> = { image: 'image', video: 'video', audio: 'audio', file: 'file' };

/**
 * Download each attachment into `<folder>/downloads/<id>/`. The folder belongs to the agent: `downloads/` must be a
 * real directory (not a link the agent planted), the message folder is created fresh, both are held open while the
 * files are written (a link planted meanwhile leads nowhere), and files are created with O_EXCL | O_NOFOLLOW. An attachment over its kind's limit, or one that fails to download, is kept with `error`
 * saying why (the agent is told), never silently dropped.
 */
export async function saveAttachments(attachments: readonly IncomingFile[], folder: string, id: string): Promise<Record<string, unknown>[]> {
  if (attachments.length === 0) return [];
  let dir: HeldDirectory | undefined;
  let ready: string | null = null;
  try {
    const downloads = HeldDirectory.inside(folder, ['downloads']);
    try {
      dir = downloads.createChild(id);
    } finally {
      downloads.close();
    }
  } catch (err) {
    ready = isUntrustedPathError(err, 'not-regular') ? "the session folder's downloads/ is not a directory" : `downloads/ is not usable: ${errorMessage(err)}`;
  }
  const used = new Set<string>();
  const saved: Record<string, unknown>[] = [];
  try {
    for (const attachment of attachments) {
      const kind: MediaKind = attachment.mimeType === 'application/pdf' ? 'pdf' : (KIND_OF[attachment.type] ?? 'file');
      const name = uniqueIn(used, safeFileName(attachment.name ?? '', attachment.type));
      const described = {
        type: attachment.type,
        name,
        ...(attachment.mimeType ? { mimeType: attachment.mimeType } : {}),
        ...(attachment.size !== undefined ? { size: attachment.size } : {}),
      };
      const error = ready ?? (await download(attachment, kind, dir!.at(name)));
      saved.push(error ? { ...described, error } : { ...described, localPath: `downloads/${id}/${name}` });
    }
  } finally {
    dir?.close();
  }
  return saved;
}

async function download(attachment: IncomingFile, kind: MediaKind, file: string): Promise<string | null> {
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
