import type { Attachment, InboundContent } from '../db/content.js';
import type { ContentBlock } from '../providers/types.js';
import type { BatchFormatter } from './batch-formatter.js';
import { formatBatch, type FormattableMessage } from './format.js';
import { prepareAttachments } from './media/prepare.js';
import type { MediaOptions } from './media/types.js';

/**
 * From claimed messages to what a provider is sent: attachments saved and turned into notes or native blocks (by
 * what the provider accepts), then the batch formatted. Messages that already carry notes were prepared before.
 */
export interface PreparedPrompt {
  messages: FormattableMessage[];
  /** the formatted text (also what the transcript shows). */
  text: string;
  /** text, or native blocks followed by the text. */
  prompt: string | ContentBlock[];
}

export async function preparePrompt(
  messages: FormattableMessage[],
  options: { timeZone: string; media: MediaOptions; formatter?: BatchFormatter },
): Promise<PreparedPrompt> {
  const blocks: ContentBlock[] = [];
  const prepared = await Promise.all(
    messages.map(async (message): Promise<FormattableMessage> => {
      if (message.notes) return message;
      const attachments = attachmentsOf(message.message);
      if (attachments.length === 0) return { ...message, notes: [] };
      const media = await prepareAttachments(message.row.id, attachments, options.media);
      blocks.push(...media.blocks);
      return { ...message, notes: media.notes };
    }),
  );
  const text = options.formatter
    ? await options.formatter.format(prepared, { timeZone: options.timeZone })
    : formatBatch(prepared, { timeZone: options.timeZone });
  return { messages: prepared, text, prompt: blocks.length > 0 ? [...blocks, { type: 'text', text }] : text };
}

/** The attachments of a chat or chat-sdk message in one shape. */
export function attachmentsOf(message: InboundContent): Attachment[] {
  if (message.kind === 'chat') return message.content.attachments ?? [];
  if (message.kind === 'chat-sdk') {
    return (message.content.attachments ?? []).map((a) => ({
      ...a,
      type: 'file' as const,
      name: typeof a.name === 'string' ? a.name : 'file',
      url: typeof a.url === 'string' ? a.url : undefined,
      data: typeof a.data === 'string' ? a.data : undefined,
      localPath: typeof a.localPath === 'string' ? a.localPath : undefined,
    }));
  }
  return [];
}
