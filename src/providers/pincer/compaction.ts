import type { AgentMessage } from '@mariozechner/pi-agent-core';
import { completeSimple, type AssistantMessage, type Message, type Model, type Api } from '@mariozechner/pi-ai';
import { archiveTranscript, Transcript } from '../../shared/transcript-archive.js';
import { summaryMessage } from './session-store.js';

/**
 * Compaction near the model's context window (seed: the built-in runtime's "压缩"): before a model call whose context
 * would come within `reserveTokens` of the window, the older part of the conversation is summarised by the model
 * itself and replaced by that summary; the recent part (about `keepRecentTokens`, cut at a user message so tool calls
 * and their results stay together) is kept. The compacted messages are archived to `agent/conversations/` first, as
 * Claude's PreCompact hook does. Runs as pi-agent-core's `transformContext`, so it works inside a long tool loop too.
 */
export interface CompactionSettings {
  contextWindow: number;
  reserveTokens: number;
  keepRecentTokens: number;
}

export function compactionSettings(contextWindow: number): CompactionSettings {
  return {
    contextWindow,
    reserveTokens: Math.min(16_384, Math.floor(contextWindow * 0.2)),
    keepRecentTokens: Math.min(20_000, Math.floor(contextWindow * 0.25)),
  };
}

/** chars/4: deliberately generous, so compaction comes early rather than after an overflow. */
function estimateTokens(message: AgentMessage): number {
  return Math.ceil(messageText(message).length / 4);
}

/**
 * The context's size: what the model reported for the last answer plus an estimate of what came after it, or the
 * estimate of everything, whichever is larger (a server may report no usage at all).
 */
export function contextTokens(messages: AgentMessage[]): number {
  const estimate = messages.reduce((sum, m) => sum + estimateTokens(m), 0);
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role === 'assistant' && m.stopReason !== 'error' && m.stopReason !== 'aborted') {
      const u = m.usage;
      const reported = u.totalTokens || u.input + u.output + u.cacheRead + u.cacheWrite;
      const after = messages.slice(i + 1).reduce((sum, x) => sum + estimateTokens(x), 0);
      return Math.max(reported + after, estimate);
    }
  }
  return estimate;
}

/** The index of the first message to keep: a user message after which about `keepRecentTokens` remain. 0: no cut. */
export function findCut(messages: AgentMessage[], keepRecentTokens: number): number {
  let tail = 0;
  for (let i = messages.length - 1; i > 0; i--) {
    tail += estimateTokens(messages[i]!);
    if (tail >= keepRecentTokens) {
      for (let j = i; j < messages.length; j++) if (messages[j]!.role === 'user') return j;
      break;
    }
  }
  // Everything fits in the tail budget: still compact all but the last user turn.
  for (let j = messages.length - 1; j > 0; j--) if (messages[j]!.role === 'user') return j;
  return 0;
}

const SUMMARY_INSTRUCTIONS =
  'You are compacting a conversation so an assistant can continue it. Summarise the conversation above: the goal, ' +
  'decisions made, facts learned (names, ids, file paths, numbers), work done and still open, and anything promised to ' +
  'the user. Be concise; use short sections and bullet points. Answer with the summary only.';

export interface Compactor {
  transform(messages: AgentMessage[], signal?: AbortSignal): Promise<AgentMessage[]>;
}

export interface CompactorDeps {
  settings: CompactionSettings;
  model: () => Model<Api>;
  apiKey: () => string | undefined;
  /** the agent's current messages (to replace them by the compacted list) */
  state: { get messages(): AgentMessage[]; set messages(value: AgentMessage[]) };
  persist: (summary: string, kept: number) => void;
  agentDir: string;
  timeZone: string;
  log: (message: string) => void;
}

/**
 * Keeps the last compaction (its summary message and the first message it kept) so every later call of the same
 * agent run sees the compacted context, although pi-agent-core's loop still holds the full list.
 */
export function createCompactor(deps: CompactorDeps): Compactor {
  let last: { summary: AgentMessage; firstKept: AgentMessage } | undefined;
  const view = (messages: AgentMessage[]): AgentMessage[] => {
    if (!last || messages[0] === last.summary) return messages;
    const index = messages.indexOf(last.firstKept);
    return index > 0 ? [last.summary, ...messages.slice(index)] : messages;
  };
  return {
    async transform(messages, signal) {
      const current = view(messages);
      const tokens = contextTokens(current);
      const { contextWindow, reserveTokens, keepRecentTokens } = deps.settings;
      if (tokens <= contextWindow - reserveTokens) return current;
      const cut = findCut(current, keepRecentTokens);
      if (cut <= 0) return current;
      try {
        const summary = await summarise(current.slice(0, cut), deps.model(), deps.apiKey(), signal);
        const archived = archiveMessages(current.slice(0, cut), deps.agentDir, deps.timeZone);
        const kept = current.slice(cut);
        const summaryMsg = summaryMessage(summary);
        last = { summary: summaryMsg, firstKept: kept[0]! };
        // The agent's own list is the same as the loop's at this point (every message_end is processed first).
        deps.state.messages = view(deps.state.messages);
        deps.persist(summary, kept.length);
        deps.log(`compacted ${cut} messages (~${tokens} tokens, window ${contextWindow}) into a summary${archived ? `; archived to ${archived}` : ''}`);
        return [summaryMsg, ...kept];
      } catch (err) {
        // Summarising failed (the server refused, an abort): go on uncompacted; the model call reports any overflow.
        deps.log(`compaction failed: ${err instanceof Error ? err.message : String(err)}`);
        return current;
      }
    },
  };
}

async function summarise(messages: AgentMessage[], model: Model<Api>, apiKey: string | undefined, signal?: AbortSignal): Promise<string> {
  const conversation = messages.map((m) => `[${m.role}]\n${clip(messageText(m), 4000)}`).join('\n\n');
  const request: Message = {
    role: 'user',
    content: [{ type: 'text', text: `<conversation>\n${conversation}\n</conversation>\n\n${SUMMARY_INSTRUCTIONS}` }],
    timestamp: Date.now(),
  };
  const answer: AssistantMessage = await completeSimple(model, { systemPrompt: 'You summarise conversations.', messages: [request] }, { apiKey, signal, maxTokens: 4096 });
  if (answer.stopReason === 'error' || answer.stopReason === 'aborted') throw new Error(answer.errorMessage ?? answer.stopReason);
  const text = answer.content.flatMap((c) => (c.type === 'text' ? [c.text] : [])).join('\n').trim();
  if (!text) throw new Error('the model returned an empty summary');
  return text;
}

function archiveMessages(messages: AgentMessage[], agentDir: string, timeZone: string): string | undefined {
  const firstUser = messages.find((m) => m.role === 'user');
  const transcript = new Transcript(firstUser ? messageText(firstUser) : 'conversation');
  for (const m of messages) {
    const text = messageText(m);
    if (text) transcript.add(m.role === 'user' ? 'prompt' : 'agent', m.role === 'toolResult' ? `[tool result ${m.toolName}]\n${text}` : text);
  }
  return archiveTranscript(agentDir, transcript, timeZone);
}

/** The text of a message: text blocks, tool calls as `name(args)`, images as a marker. */
export function messageText(message: AgentMessage): string {
  const content = message.content;
  if (typeof content === 'string') return content;
  return content
    .map((block) => {
      if (block.type === 'text') return block.text;
      if (block.type === 'toolCall') return `[tool call ${block.name}(${JSON.stringify(block.arguments)})]`;
      if (block.type === 'image') return '[image]';
      return '';
    })
    .filter(Boolean)
    .join('\n');
}

function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)} …`;
}
