import type { ChatContent, ChatSdkContent, InboundContent, SystemContent, TaskContent, WebhookContent } from '../db/content.js';
import type { InboundRow } from '../db/types.js';
import { compareIso, formatTime } from '../shared/time.js';
import { escapeBlock, escapeJson, escapeLine, escapeXml, xmlAttributes } from './xml.js';

/**
 * Message formatting: rows of one batch become one prompt. Chat messages are XML with the
 * agent-visible integer id (`seq`); tasks, webhooks and system responses are labelled sections. Mixed kinds keep
 * their chronological order, each run of one kind in its own section. Routing fields never appear; every text and
 * attribute value is escaped.
 */
export interface FormattableMessage {
  row: InboundRow;
  message: InboundContent;
  /** extra lines to add inside the message (e.g. `[file available at: …]`, script output), already decided by the runner. */
  notes?: string[];
}

export interface FormatOptions {
  timeZone: string;
}

const SECTION_SEPARATOR = '\n\n---\n\n';

export function formatBatch(messages: FormattableMessage[], options: FormatOptions): string {
  const sorted = [...messages].sort((a, b) => compareIso(a.row.timestamp, b.row.timestamp) || a.row.seq - b.row.seq);
  const sections: string[] = [];
  let chatRun: string[] = [];
  const flushChat = (): void => {
    if (chatRun.length === 0) return;
    sections.push(`<context ${xmlAttributes({ timezone: options.timeZone })}/>\n<messages>\n${chatRun.join('\n')}\n</messages>`);
    chatRun = [];
  };
  for (const item of sorted) {
    const { message } = item;
    if (message.kind === 'chat' || message.kind === 'chat-sdk') {
      chatRun.push(formatChat(item, options));
      continue;
    }
    flushChat();
    sections.push(formatSection(item));
  }
  flushChat();
  return sections.join(SECTION_SEPARATOR);
}

function formatChat(item: FormattableMessage, options: FormatOptions): string {
  const { row, message } = item;
  const time = formatTime(row.timestamp, options.timeZone);
  const lines: string[] = [];
  let sender: string;
  if (message.kind === 'chat') {
    const content: ChatContent = message.content;
    sender = content.sender;
    if (content.replyTo) {
      lines.push(`<quoted_message ${xmlAttributes({ sender: content.replyTo.sender })}>${escapeBlock(content.replyTo.text)}</quoted_message>`);
    }
    lines.push(escapeBlock(content.text));
  } else {
    const content = message.content as ChatSdkContent;
    sender = chatSdkSender(content);
    lines.push(escapeBlock(content.text));
  }
  for (const note of item.notes ?? []) lines.push(escapeXml(note));
  const body = lines.filter((line) => line.length > 0).join('\n');
  return `<message ${xmlAttributes({ id: row.seq, sender, time })}>${body}</message>`;
}

function chatSdkSender(content: ChatSdkContent): string {
  const { fullName, userName, userId } = content.author;
  const name = fullName ?? userName ?? userId ?? 'unknown';
  return userName && userName !== name ? `${name} (${userName})` : name;
}

function formatSection(item: FormattableMessage): string {
  const { message, row } = item;
  const notes = (item.notes ?? []).map(escapeXml);
  switch (message.kind) {
    case 'task': {
      const content: TaskContent = message.content;
      const parts = [`[SCHEDULED TASK] (task ${escapeXml(row.series_id ?? row.id)})`, ...notes];
      parts.push(`Instructions:\n${escapeBlock(content.prompt)}`);
      return parts.join('\n\n');
    }
    case 'webhook': {
      const content: WebhookContent = message.content;
      // signed: the host checked the sender's signature; anyone with an API token can post an unsigned one under any name
      const origin = content.signed === true ? '(signed by its sender)' : '(unsigned: posted with an API token)';
      return [`[WEBHOOK: ${escapeLine(content.source)}/${escapeLine(content.event)}] ${origin}`, escapeJson(content.payload), ...notes].join('\n\n');
    }
    case 'system': {
      const content: SystemContent = message.content;
      const lines = [`Action: ${escapeLine(String(content.action ?? content.type))}`];
      if ('status' in content) lines.push(`Status: ${escapeXml(String(content.status))}`);
      if ('result' in content && content.result !== undefined) lines.push(`Result: ${escapeBlock(JSON.stringify(content.result))}`);
      if ('error' in content && content.error !== undefined) lines.push(`Error: ${escapeBlock(String(content.error))}`);
      return ['[SYSTEM RESPONSE]', lines.join('\n'), ...notes].join('\n\n');
    }
    default:
      throw new Error(`formatSection: ${message.kind} is formatted as chat`);
  }
}
