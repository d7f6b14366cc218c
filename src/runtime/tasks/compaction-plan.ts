/**
 * Compaction planning for the built-in runtime, run on a worker of the compaction pool so a long transcript never
 * blocks the runner's event loop: token estimation over the whole conversation, context pruning (old tool results
 * over a budget become a short stub saying what was there), the choice of what to cut, and the text of the summary
 * request. The caller (src/providers/pincer/compaction.ts) only applies the plan and calls the model. Pure functions of
 * plain data; the named export `planCompaction` is the worker task.
 */
export interface PlanBlock {
  type: string;
  text?: string;
  name?: string;
  arguments?: unknown;
}

/** The parts of a pi-agent-core message the plan reads (the structured clone of the real message). */
export interface PlanMessage {
  role: string;
  content: string | PlanBlock[];
  toolName?: string;
  stopReason?: string;
  usage?: { input: number; output: number; cacheRead: number; cacheWrite: number; totalTokens?: number };
}

export interface CompactionPlanInput {
  messages: PlanMessage[];
  contextWindow: number;
  reserveTokens: number;
  keepRecentTokens: number;
  /** estimated tokens of tool results before the current turn that are kept; older ones are stubbed. 0: no pruning */
  pruneBudgetTokens: number;
  /** the group's compaction instructions, added to the summary request */
  instructions?: string;
}

export interface PrunedResult {
  index: number;
  stub: string;
  tokens: number;
}

export interface CompactionPlan {
  /** estimated context before pruning */
  tokens: number;
  /** after the prunes below */
  tokensAfterPrune: number;
  prune: PrunedResult[];
  /** present when the context (after pruning) is still too close to the window */
  compact?: { cut: number; request: string } | { refused: string };
}

export type CompactionTasks = {
  planCompaction: { input: CompactionPlanInput; output: CompactionPlan };
};

/** chars/4: deliberately generous, so compaction comes early rather than after an overflow. */
export function estimateTokens(message: PlanMessage): number {
  return Math.ceil(messageText(message).length / 4);
}

/**
 * The context's size: what the model reported for the last answer plus an estimate of what came after it, or the
 * estimate of everything, whichever is larger (a server may report no usage at all).
 */
export function contextTokens(messages: PlanMessage[], estimates = messages.map(estimateTokens)): number {
  const estimate = estimates.reduce((sum, n) => sum + n, 0);
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role === 'assistant' && m.usage && m.stopReason !== 'error' && m.stopReason !== 'aborted') {
      const u = m.usage;
      const reported = u.totalTokens || u.input + u.output + u.cacheRead + u.cacheWrite;
      const after = estimates.slice(i + 1).reduce((sum, n) => sum + n, 0);
      return Math.max(reported + after, estimate);
    }
  }
  return estimate;
}

/** The index of the first message to keep: a user message after which about `keepRecentTokens` remain. 0: no cut. */
export function findCut(messages: PlanMessage[], keepRecentTokens: number, estimates = messages.map(estimateTokens)): number {
  let tail = 0;
  for (let i = messages.length - 1; i > 0; i--) {
    tail += estimates[i]!;
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

export function planCompaction(input: CompactionPlanInput): CompactionPlan {
  const { messages } = input;
  const estimates = messages.map(estimateTokens);
  const tokens = contextTokens(messages, estimates);
  const prune = pruneOldToolResults(messages, estimates, input.pruneBudgetTokens);
  let saved = 0;
  for (const p of prune) {
    saved += estimates[p.index]! - p.tokens;
    estimates[p.index] = p.tokens;
  }
  const tokensAfterPrune = Math.max(0, tokens - saved);
  const plan: CompactionPlan = { tokens, tokensAfterPrune, prune };
  if (tokensAfterPrune <= input.contextWindow - input.reserveTokens) return plan;
  const view = messages.map((m, i) => (prune.some((p) => p.index === i) ? { ...m, content: prune.find((p) => p.index === i)!.stub } : m));
  const cut = findCut(view, input.keepRecentTokens, estimates);
  const lastUser = lastIndexOf(view, 'user');
  // Guard: the latest user message is always kept, whatever the budget says.
  if (cut <= 0 || lastUser < 0) plan.compact = { refused: 'no user message to cut at: nothing can be compacted without losing the latest request' };
  else if (cut > lastUser) plan.compact = { refused: 'the cut would drop the latest user message' };
  else plan.compact = { cut, request: summaryRequest(view.slice(0, cut), input.instructions) };
  return plan;
}

/**
 * Tool results before the current turn (the last user message), newest first, are kept while their estimated tokens
 * stay within `budget`; each older one becomes a stub naming the tool and what it returned.
 */
function pruneOldToolResults(messages: PlanMessage[], estimates: number[], budget: number): PrunedResult[] {
  if (budget <= 0) return [];
  const turnStart = lastIndexOf(messages, 'user');
  const pruned: PrunedResult[] = [];
  let kept = 0;
  for (let i = turnStart - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role !== 'toolResult') continue;
    const text = messageText(m);
    if (text.startsWith(STUB_PREFIX)) continue;
    if (kept + estimates[i]! <= budget) {
      kept += estimates[i]!;
      continue;
    }
    const firstLine = text.split('\n', 1)[0]!.slice(0, 120);
    const stub = `${STUB_PREFIX} ${m.toolName ?? 'a tool'} returned ${text.length} characters here, starting: ${JSON.stringify(firstLine)}; run it again if you need it]`;
    pruned.push({ index: i, stub, tokens: Math.ceil(stub.length / 4) });
  }
  return pruned.reverse();
}

const STUB_PREFIX = '[old tool result pruned to save context:';

function summaryRequest(messages: PlanMessage[], instructions: string | undefined): string {
  const conversation = messages.map((m) => `[${m.role}]\n${clip(messageText(m), 4000)}`).join('\n\n');
  const extra = instructions?.trim()
    ? `\n\nThe group asks every summary to follow these instructions too:\n<instructions>${escapeXml(instructions.trim())}</instructions>`
    : '';
  return `<conversation>\n${conversation}\n</conversation>\n\n${SUMMARY_INSTRUCTIONS}${extra}`;
}

function lastIndexOf(messages: PlanMessage[], role: string): number {
  for (let i = messages.length - 1; i >= 0; i--) if (messages[i]!.role === role) return i;
  return -1;
}

/** The text of a message: text blocks, tool calls as `name(args)`, images as a marker. */
export function messageText(message: PlanMessage): string {
  const content = message.content;
  if (typeof content === 'string') return content;
  return content
    .map((block) => {
      if (block.type === 'text') return block.text ?? '';
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

function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
