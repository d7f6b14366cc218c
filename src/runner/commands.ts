import { expandPrompt } from '../runtime/resources/prompt-commands.js';
import type { PromptResource } from '../runtime/resources/types.js';
import type { ClaimedMessage } from './queue.js';

/**
 * Slash commands: a chat message whose text is a command is not formatted as a message. Runner
 * commands are handled here; prompts of the agent group's resource package (`/name args`) are expanded into their
 * template and sent as the user's message; provider-native ones go to the provider raw; anything else is plain text.
 */
export const RUNNER_COMMANDS = ['/clear'] as const;
export type RunnerCommand = (typeof RUNNER_COMMANDS)[number];

export type CommandKind =
  { type: 'runner'; command: RunnerCommand } | { type: 'prompt'; prompt: PromptResource; args: string } | { type: 'native'; text: string } | null;

/** The command a message carries, if any. `nativeCommands` are the provider's (e.g. `/compact`). */
export function detectCommand(message: ClaimedMessage, nativeCommands: readonly string[], prompts: readonly PromptResource[] = []): CommandKind {
  const { kind } = message.message;
  if (kind !== 'chat' && kind !== 'chat-sdk') return null;
  const text = message.message.content.text.trim();
  if (!text.startsWith('/')) return null;
  const name = text.split(/\s+/, 1)[0]!.toLowerCase();
  const runner = RUNNER_COMMANDS.find((command) => command === name);
  if (runner) return { type: 'runner', command: runner };
  const prompt = prompts.find((p) => `/${p.name}` === name);
  if (prompt) return { type: 'prompt', prompt, args: text.slice(name.length).trim() };
  if (nativeCommands.includes(name)) return { type: 'native', text };
  return null;
}

/** The message with its text replaced by the expanded prompt: formatted, routed and archived like any message. */
export function withPromptExpanded(message: ClaimedMessage, prompt: PromptResource, args: string): ClaimedMessage {
  const text = expandPrompt(prompt, args);
  const inbound = message.message;
  if (inbound.kind === 'chat') return { ...message, message: { kind: 'chat', content: { ...inbound.content, text } } };
  if (inbound.kind === 'chat-sdk') return { ...message, message: { kind: 'chat-sdk', content: { ...inbound.content, text } } };
  return message;
}
