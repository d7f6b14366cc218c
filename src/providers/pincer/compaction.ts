import type { AgentMessage } from '@mariozechner/pi-agent-core';
import { completeSimple, type AssistantMessage, type Message, type Model, type Api } from '@mariozechner/pi-ai';
import { messageText, type CompactionPlan, type CompactionPlanInput, type PlanMessage } from '../../runtime/tasks/compaction-plan.js';
import { archiveTranscript, Transcript } from '../../shared/transcript-archive.js';
import { summaryMessage } from './session-store.js';

/**
 * Compaction near the model's context window, with the runtime's hooks: before a model call, a plan made on a worker
 * (src/runtime/tasks/compaction-plan.ts) says which old tool results to prune (context pruning: replaced by a stub in
 * what the model is sent) and, when the context is still within `reserveTokens` of the window, where to cut; the older
 * part is then summarised by the model itself (with the group's compaction instructions) and replaced by the summary.
 * The compacted messages are archived to `agent/conversations/` first, as Claude's PreCompact hook does. The
 * compaction guard: never compact again without progress, never drop the latest user message, and a failed summary
 * keeps the conversation whole and is retried before a later model call — each case logged. Runs as pi-agent-core's
 * `transformContext`, so it works inside a long tool loop too.
 */
export interface CompactionSettings {
  contextWindow: number;
  reserveTokens: number;
  keepRecentTokens: number;
  pruneBudgetTokens: number;
  instructions?: string;
}

export function compactionSettings(
  contextWindow: number,
  group: { compactionInstructions?: string; pruneToolResultsTokens?: number } = {},
): CompactionSettings {
  return {
    contextWindow,
    reserveTokens: Math.min(16_384, Math.floor(contextWindow * 0.2)),
    keepRecentTokens: Math.min(20_000, Math.floor(contextWindow * 0.25)),
    pruneBudgetTokens: group.pruneToolResultsTokens ?? Math.min(12_000, Math.floor(contextWindow * 0.15)),
    ...(group.compactionInstructions ? { instructions: group.compactionInstructions } : {}),
  };
}

/** Runs a plan on the compaction pool (or, in a test of this file's logic, anywhere). */
export type CompactionPlanner = (input: CompactionPlanInput, inputBytes: number, signal?: AbortSignal) => Promise<CompactionPlan>;

export interface Compactor {
  transform(messages: AgentMessage[], signal?: AbortSignal): Promise<AgentMessage[]>;
}

export interface CompactorDeps {
  settings: CompactionSettings;
  plan: CompactionPlanner;
  model: () => Model<Api>;
  apiKey: () => string | undefined;
  /** the same retries and timeout as the agent's own model calls */
  request: { maxRetries: number; timeoutMs: number };
  /** the agent's current messages (to replace them by the compacted list) */
  state: { get messages(): AgentMessage[]; set messages(value: AgentMessage[]) };
  persist: (summary: string, kept: number) => void;
  agentDir: string;
  timeZone: string;
  log: (message: string) => void;
}

/** Characters of a message's text, counted once per message object: the input size the pool is told, without a serialisation pass. */
const sizes = new WeakMap<AgentMessage, number>();
function sizeOf(message: AgentMessage): number {
  let size = sizes.get(message);
  if (size === undefined) {
    const content = message.content;
    size = typeof content === 'string' ? content.length : content.reduce((n, b) => n + ('text' in b ? b.text.length : 'data' in b ? b.data.length : 64), 0);
    sizes.set(message, size);
  }
  return size;
}

/**
 * Keeps the last compaction (its summary message and the first message it kept) so every later call of the same
 * agent run sees the compacted context, although pi-agent-core's loop still holds the full list.
 */
export function createCompactor(deps: CompactorDeps): Compactor {
  let last: { summary: AgentMessage; firstKept: AgentMessage } | undefined;
  /** a summary failed: retry only once the conversation has grown past this many messages */
  let failedAt: number | undefined;
  let reportedPrune = '';
  const view = (messages: AgentMessage[]): AgentMessage[] => {
    if (!last || messages[0] === last.summary) return messages;
    const index = messages.indexOf(last.firstKept);
    return index > 0 ? [last.summary, ...messages.slice(index)] : messages;
  };
  return {
    async transform(messages, signal) {
      const current = view(messages);
      const { contextWindow, reserveTokens, keepRecentTokens, pruneBudgetTokens, instructions } = deps.settings;
      const input: CompactionPlanInput = {
        messages: current as PlanMessage[],
        contextWindow,
        reserveTokens,
        keepRecentTokens,
        pruneBudgetTokens,
        ...(instructions ? { instructions } : {}),
      };
      const plan = await deps.plan(
        input,
        current.reduce((n, m) => n + sizeOf(m), 0),
        signal,
      );
      const pruned = applyPrunes(current, plan);
      if (plan.prune.length) {
        const line = `context pruning: ${plan.prune.length} old tool results replaced by stubs (~${plan.tokens} → ~${plan.tokensAfterPrune} tokens)`;
        // once per change, not before every model call of a tool loop
        if (line !== reportedPrune) deps.log(line);
        reportedPrune = line;
      }
      if (!plan.compact) return pruned;
      if ('refused' in plan.compact) {
        deps.log(`compaction guard: not compacting (~${plan.tokensAfterPrune} tokens, window ${contextWindow}): ${plan.compact.refused}`);
        return pruned;
      }
      const { cut, request } = plan.compact;
      if (last && pruned[0] === last.summary && cut <= 1) {
        deps.log(
          `compaction guard: nothing new to compact since the last compaction (~${plan.tokensAfterPrune} tokens, window ${contextWindow}); left as it is`,
        );
        return pruned;
      }
      if (failedAt !== undefined && current.length <= failedAt) return pruned;
      try {
        const summary = await summarise(request, deps.model(), { apiKey: deps.apiKey(), ...deps.request, ...(signal ? { signal } : {}) });
        failedAt = undefined;
        const archived = archiveMessages(current.slice(0, cut), deps.agentDir, deps.timeZone);
        const kept = current.slice(cut);
        const summaryMsg = summaryMessage(summary);
        last = { summary: summaryMsg, firstKept: kept[0]! };
        // The agent's own list is the same as the loop's at this point (every message_end is processed first).
        deps.state.messages = view(deps.state.messages);
        deps.persist(summary, kept.length);
        deps.log(
          `compacted ${cut} messages (~${plan.tokensAfterPrune} tokens, window ${contextWindow}) into a summary${archived ? `; archived to ${archived}` : ''}`,
        );
        return [summaryMsg, ...pruned.slice(cut)];
      } catch (err) {
        if (signal?.aborted) return pruned;
        failedAt = current.length;
        deps.log(
          `compaction guard: the summary failed (${err instanceof Error ? err.message : String(err)}); the conversation is kept whole and compaction is retried before a later model call`,
        );
        return pruned;
      }
    },
  };
}

function applyPrunes(messages: AgentMessage[], plan: CompactionPlan): AgentMessage[] {
  if (!plan.prune.length) return messages;
  const out = messages.slice();
  for (const p of plan.prune) {
    const m = out[p.index];
    if (m?.role === 'toolResult') out[p.index] = { ...m, content: [{ type: 'text', text: p.stub }] };
  }
  return out;
}

async function summarise(
  requestText: string,
  model: Model<Api>,
  options: { apiKey: string | undefined; maxRetries: number; timeoutMs: number; signal?: AbortSignal },
): Promise<string> {
  const request: Message = { role: 'user', content: [{ type: 'text', text: requestText }], timestamp: Date.now() };
  const answer: AssistantMessage = await completeSimple(
    model,
    { systemPrompt: 'You summarise conversations.', messages: [request] },
    { ...options, maxTokens: 4096 },
  );
  if (answer.stopReason === 'error' || answer.stopReason === 'aborted') throw new Error(answer.errorMessage ?? answer.stopReason);
  const text = answer.content
    .flatMap((c) => (c.type === 'text' ? [c.text] : []))
    .join('\n')
    .trim();
  if (!text) throw new Error('the model returned an empty summary');
  return text;
}

function archiveMessages(messages: AgentMessage[], agentDir: string, timeZone: string): string | undefined {
  const firstUser = messages.find((m) => m.role === 'user');
  const transcript = new Transcript(firstUser ? messageText(firstUser as PlanMessage) : 'conversation');
  for (const m of messages) {
    const text = messageText(m as PlanMessage);
    if (text) transcript.add(m.role === 'user' ? 'prompt' : 'agent', m.role === 'toolResult' ? `[tool result ${m.toolName}]\n${text}` : text);
  }
  return archiveTranscript(agentDir, transcript, timeZone);
}
