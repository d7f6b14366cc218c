import { z } from 'zod';

/**
 * Input pieces shared by the tools (validated at the edge). The SDK answers input that fails them with a tool
 * error naming the field, so each limit says what to do instead.
 */
export const MAX_TEXT_CHARS = 64_000;
export const MAX_LABEL_CHARS = 200;

/** Text that must say something: not empty, not only whitespace, not longer than `max` characters. */
export function text(what: string, max = MAX_TEXT_CHARS, tooLong = 'split it into several messages or send it as a file') {
  return z
    .string()
    .max(max, { error: `${what} is longer than ${max} characters: ${tooLong}` })
    .refine((value) => value.trim().length > 0, { error: `${what} is empty` });
}

/** A short name or id (a label, an agent group, a platform id). */
export function label(what: string, max = MAX_LABEL_CHARS) {
  return text(what, max, 'use a shorter one');
}

/**
 * The agent-visible integer id of a message (the `id` of `<message id="…">`, or the id a tool returned). Models
 * send it as a number or as a string, so a positive integer or its decimal string is accepted.
 */
export const messageId = z
  .union([z.number().int().positive(), z.string().regex(/^\s*\d+\s*$/, { error: 'messageId must be a message id such as 42' })])
  .transform((value) => Number(value))
  .describe('the integer id of the message, as shown in <message id="…"> or returned when you sent it');

export const destination = {
  channel: label('channel').optional().describe('channel type of another destination, e.g. "telegram" (default: reply where the conversation is)'),
  platformId: label('platformId').optional().describe('chat id on that channel (needed with channel)'),
  threadId: label('threadId').optional().describe('thread id inside that chat'),
};
