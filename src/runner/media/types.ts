import type { AttachmentCodec } from '../../runtime/attachments.js';
import type { DownloadAllowList, ResolveHost } from './download-targets.js';

/** What an inbound attachment is, decided from its bytes. */
export type MediaKind = 'image' | 'pdf' | 'audio' | 'video' | 'file';

/** Image types providers take as native blocks (Claude: JPEG, PNG, GIF, WebP). */
export const NATIVE_IMAGE_MIME = ['image/jpeg', 'image/png', 'image/gif', 'image/webp'] as const;

/** Largest file kept per kind; larger ones are not saved and the prompt says so. */
export const MAX_BYTES: Record<MediaKind, number> = {
  image: 20 * 1024 * 1024,
  pdf: 32 * 1024 * 1024,
  audio: 50 * 1024 * 1024,
  video: 100 * 1024 * 1024,
  file: 50 * 1024 * 1024,
};

/** Largest image / PDF sent as a native content block; a larger one is referenced as a file instead. */
export const MAX_NATIVE_BYTES: Record<'image' | 'pdf', number> = { image: 5 * 1024 * 1024, pdf: 32 * 1024 * 1024 };

/** The most any download may bring before it is cut off. */
export const MAX_DOWNLOAD_BYTES = Math.max(...Object.values(MAX_BYTES));

export interface MediaOptions {
  /** the session folder; downloads go to `<root>/downloads/<message-id>/`, localPath must resolve inside it. */
  root: string;
  /** kinds the provider takes as native content blocks (empty: everything is referenced as a file). */
  nativeMedia: readonly ('image' | 'pdf')[];
  /** timeout of a URL download. */
  downloadTimeoutMs: number;
  /** where URL downloads may connect beyond public addresses (PINCER_ATTACHMENT_ALLOW_HOSTS). */
  allowHosts: DownloadAllowList;
  /** in a sandbox without a network: the setting that gives it one, named when a download fails. */
  noNetwork?: string;
  /** how host names resolve (tests); dns.lookup by default. */
  resolveHost?: ResolveHost;
  /** encodes native blocks (on a worker for large files); without it, inline. */
  codec?: AttachmentCodec;
}

/** One attachment's outcome: saved (with its path and detected type) or not, with the reason. */
export type SavedAttachment =
  { ok: true; name: string; path: string; kind: MediaKind; mime: string; size: number; native: boolean } | { ok: false; name: string; reason: string };
