import type { ClaimedMessage } from './queue.js';

/**
 * Slash commands (seed "命令检测"): a chat message whose text is a command is not formatted as a message. Runner
 * commands are handled here; provider-native ones go to the provider raw; anything else is plain text.
 */
export const RUNNER_COMMANDS = ['/clear'] as const;
export type RunnerCommand = (typeof RUNNER_COMMANDS)[number];

export type CommandKind = { type: 'runner'; command: RunnerCommand } | { type: 'native'; text: string } | null;

/** The command a message carries, if any. `nativeCommands` are the provider's (e.g. `/compact`). */
export function detectCommand(message: ClaimedMessage, nativeCommands: readonly string[]): CommandKind {
  const { kind } = message.message;
  if (kind !== 'chat' && kind !== 'chat-sdk') return null;
  const text = message.message.content.text.trim();
  if (!text.startsWith('/')) return null;
  const name = text.split(/\s+/, 1)[0]!.toLowerCase();
  const runner = RUNNER_COMMANDS.find((command) => command === name);
  if (runner) return { type: 'runner', command: runner };
  if (nativeCommands.includes(name)) return { type: 'native', text };
  return null;
}
