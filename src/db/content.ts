import { z } from 'zod';
import { INBOUND_KINDS, type InboundKind } from './types.js';
import { describeIssues } from '../shared/zod-issues.js';

/**
 * The JSON in `messages_in.content` and `messages_out.content`, by kind. Content is validated where it is
 * read, because any process — or an outside tool — may have written it.
 */
export const AttachmentSchema = z.looseObject({
  type: z.enum(['image', 'pdf', 'audio', 'video', 'file']),
  name: z.string(),
  mimeType: z.string().optional(),
  url: z.string().optional(),
  localPath: z.string().optional(),
  data: z.string().optional(),
  size: z.number().optional(),
});
export type Attachment = z.infer<typeof AttachmentSchema>;

export const ChatContentSchema = z.looseObject({
  text: z.string(),
  sender: z.string(),
  senderId: z.string().optional(),
  attachments: z.array(AttachmentSchema).optional(),
  replyTo: z.object({ id: z.string(), sender: z.string(), text: z.string() }).optional(),
});

export const ChatSdkContentSchema = z.looseObject({
  text: z.string(),
  author: z.looseObject({
    userId: z.string().optional(),
    userName: z.string().optional(),
    fullName: z.string().optional(),
  }),
  attachments: z.array(z.looseObject({ type: z.string().optional(), name: z.string().optional(), url: z.string().optional() })).optional(),
});

export const TaskContentSchema = z.looseObject({
  prompt: z.string(),
  script: z.string().optional(),
});

export const WebhookContentSchema = z.looseObject({
  source: z.string(),
  event: z.string(),
  payload: z.unknown(),
  /** true when the host checked the sender's signature (a signed webhook); absent or false: posted with a token. */
  signed: z.boolean().optional(),
});

export const QuestionResponseSchema = z.looseObject({
  type: z.literal('question_response'),
  questionId: z.string(),
  selectedOption: z.string(),
  userId: z.string().optional(),
});

export const ActionResultSchema = z.looseObject({
  action: z.string(),
  status: z.string(),
  result: z.unknown().optional(),
  error: z.string().optional(),
});

export const SystemContentSchema = z.union([QuestionResponseSchema, ActionResultSchema]);

export type ChatContent = z.infer<typeof ChatContentSchema>;
export type ChatSdkContent = z.infer<typeof ChatSdkContentSchema>;
export type TaskContent = z.infer<typeof TaskContentSchema>;
export type WebhookContent = z.infer<typeof WebhookContentSchema>;
export type SystemContent = z.infer<typeof SystemContentSchema>;

/** An inbound message whose kind is known and whose content passed validation. */
export type InboundContent =
  | { kind: 'chat'; content: ChatContent }
  | { kind: 'chat-sdk'; content: ChatSdkContent }
  | { kind: 'task'; content: TaskContent }
  | { kind: 'webhook'; content: WebhookContent }
  | { kind: 'system'; content: SystemContent };

const SCHEMAS: { [K in InboundKind]: z.ZodType } = {
  chat: ChatContentSchema,
  'chat-sdk': ChatSdkContentSchema,
  task: TaskContentSchema,
  webhook: WebhookContentSchema,
  system: SystemContentSchema,
};

export type ParseResult<T> = { ok: true; value: T } | { ok: false; error: string };

function isInboundKind(kind: string): kind is InboundKind {
  return (INBOUND_KINDS as readonly string[]).includes(kind);
}

/** Validate a row's kind and content JSON; the error says what is wrong in words a person can act on. */
export function parseInboundContent(kind: string, json: string): ParseResult<InboundContent> {
  if (!isInboundKind(kind)) {
    return { ok: false, error: `unknown kind "${kind}" (known: ${INBOUND_KINDS.join(', ')})` };
  }
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch (err) {
    return { ok: false, error: `content is not valid JSON: ${(err as Error).message}` };
  }
  const parsed = SCHEMAS[kind].safeParse(raw);
  if (!parsed.success) {
    return { ok: false, error: `invalid ${kind} content: ${describeIssues(parsed.error)}` };
  }
  return { ok: true, value: { kind, content: parsed.data } as InboundContent };
}

/** One line out of zod issues: `text: expected string, received undefined; sender: …`. */
export { describeIssues };

// Outbound content: what the runner and the MCP tools write, what the host delivers.
export const OutboundChatSchema = z.object({ text: z.string(), files: z.array(z.string()).optional() });
export const OutboundEditSchema = z.object({ operation: z.literal('edit'), messageId: z.number().int(), text: z.string() });
export const OutboundReactionSchema = z.object({
  operation: z.literal('reaction'),
  messageId: z.number().int(),
  emoji: z.string(),
});
export const OutboundQuestionSchema = z.object({
  operation: z.literal('ask_question'),
  questionId: z.string(),
  title: z.string(),
  question: z.string(),
  options: z.array(z.object({ label: z.string(), selectedLabel: z.string().optional(), value: z.string() })),
});
export const OutboundCardSchema = z.object({ type: z.literal('card'), card: z.unknown(), fallbackText: z.string().optional() });
export const OutboundSystemSchema = z.looseObject({ action: z.string() });
