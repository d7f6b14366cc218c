import { randomUUID } from 'node:crypto';

/**
 * The two streaming wire formats of the fake OpenAI-compatible server: the Responses API (what the Codex CLI speaks)
 * and Chat Completions (what OpenCode's `@ai-sdk/openai-compatible` speaks). Only what the real CLIs need, nothing more.
 */

/**
 * One model turn's output: some text, one MCP tool call named the way the client names it (Codex: a namespace,
 * OpenCode: `<server>_<tool>`), or one call of a function by its exact name (the built-in runtime: `bash`,
 * `mcp__pincer__send_message`).
 */
export type ModelOutput = { text: string } | { tool: string; server: string; args: Record<string, unknown> } | { call: string; args: Record<string, unknown> };

/** The token counts a reply reports: `input` includes `cached` (as both APIs count them). */
export interface WireUsage {
  input: number;
  cached: number;
  output: number;
}

const DEFAULT_USAGE: WireUsage = { input: 10, cached: 0, output: 5 };

function sse(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** The first event of a Responses stream (also what a stalled stream sends before going quiet). */
export function responsesCreated(responseId: string): string {
  return sse('response.created', { type: 'response.created', response: { id: responseId, status: 'in_progress', output: [] } });
}

/** A complete Responses stream after `response.created`: one output item, then `response.completed`. */
export function responsesBody(responseId: string, output: ModelOutput, tokens: WireUsage = DEFAULT_USAGE): string {
  const usage = {
    input_tokens: tokens.input,
    input_tokens_details: { cached_tokens: tokens.cached },
    output_tokens: tokens.output,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: tokens.input + tokens.output,
  };
  let item: Record<string, unknown>;
  let chunks = '';
  if ('text' in output) {
    const id = `msg_${randomUUID()}`;
    item = { type: 'message', id, role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: output.text, annotations: [] }] };
    chunks += sse('response.output_item.added', { type: 'response.output_item.added', output_index: 0, item: { ...item, status: 'in_progress', content: [] } });
    chunks += sse('response.output_text.delta', { type: 'response.output_text.delta', item_id: id, output_index: 0, content_index: 0, delta: output.text });
  } else if ('call' in output) {
    item = {
      type: 'function_call',
      id: `fc_${randomUUID()}`,
      call_id: `call_${randomUUID()}`,
      name: output.call,
      arguments: JSON.stringify(output.args),
      status: 'completed',
    };
    chunks += sse('response.output_item.added', {
      type: 'response.output_item.added',
      output_index: 0,
      item: { ...item, arguments: '', status: 'in_progress' },
    });
    chunks += sse('response.function_call_arguments.delta', {
      type: 'response.function_call_arguments.delta',
      item_id: item.id,
      output_index: 0,
      delta: item.arguments,
    });
  } else {
    // Codex exposes MCP tools as functions named by the tool, in the namespace `mcp__<server>`.
    item = {
      type: 'function_call',
      id: `fc_${randomUUID()}`,
      call_id: `call_${randomUUID()}`,
      name: output.tool,
      namespace: `mcp__${output.server}`,
      arguments: JSON.stringify(output.args),
      status: 'completed',
    };
    chunks += sse('response.output_item.added', { type: 'response.output_item.added', output_index: 0, item });
  }
  chunks += sse('response.output_item.done', { type: 'response.output_item.done', output_index: 0, item });
  chunks += sse('response.completed', { type: 'response.completed', response: { id: responseId, status: 'completed', output: [item], usage } });
  return chunks;
}

function chatChunk(id: string, model: string, choice: Record<string, unknown>, extra: Record<string, unknown> = {}): string {
  const chunk = { id, object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model, choices: [{ index: 0, ...choice }], ...extra };
  return `data: ${JSON.stringify(chunk)}\n\n`;
}

/** The first chunk of a Chat Completions stream (also what a stalled stream sends before going quiet). */
export function chatStart(id: string, model: string): string {
  return chatChunk(id, model, { delta: { role: 'assistant', content: '' }, finish_reason: null });
}

/** A complete Chat Completions stream after `chatStart`: the text or the tool call, the finish reason, `[DONE]`. */
export function chatBody(id: string, model: string, output: ModelOutput, tokens: WireUsage = DEFAULT_USAGE): string {
  let chunks = '';
  let finish: string;
  if ('text' in output) {
    chunks += chatChunk(id, model, { delta: { content: output.text }, finish_reason: null });
    finish = 'stop';
  } else {
    // OpenCode names MCP tools `<server>_<tool>`; an exact call keeps its name.
    const name = 'call' in output ? output.call : `${output.server}_${output.tool}`;
    const call = { index: 0, id: `call_${randomUUID()}`, type: 'function', function: { name, arguments: JSON.stringify(output.args) } };
    chunks += chatChunk(id, model, { delta: { tool_calls: [call] }, finish_reason: null });
    finish = 'tool_calls';
  }
  chunks += chatChunk(
    id,
    model,
    { delta: {}, finish_reason: finish },
    {
      usage: {
        prompt_tokens: tokens.input,
        completion_tokens: tokens.output,
        total_tokens: tokens.input + tokens.output,
        prompt_tokens_details: { cached_tokens: tokens.cached },
      },
    },
  );
  return chunks + 'data: [DONE]\n\n';
}

/** The text of every `role` message in a request of either API, oldest first (content strings or text parts). */
export function messageTexts(body: Record<string, unknown>, role: string): string[] {
  const entries = (Array.isArray(body.input) ? body.input : Array.isArray(body.messages) ? body.messages : []) as unknown[];
  const texts: string[] = [];
  for (const entry of entries) {
    if (!entry || typeof entry !== 'object') continue;
    const message = entry as { role?: unknown; content?: unknown };
    if (message.role !== role) continue;
    if (typeof message.content === 'string') texts.push(message.content);
    else if (Array.isArray(message.content)) {
      const parts = message.content as { text?: unknown }[];
      texts.push(parts.map((part) => (typeof part.text === 'string' ? part.text : '')).join(''));
    }
  }
  return texts;
}

/** The names of the tools a request offers the model, as the model would call them. */
export function toolNames(body: Record<string, unknown>): string[] {
  const tools = (Array.isArray(body.tools) ? body.tools : []) as Record<string, unknown>[];
  const names: string[] = [];
  for (const tool of tools) {
    const fn = tool.function as { name?: string } | undefined;
    if (typeof tool.name === 'string') names.push(typeof tool.namespace === 'string' ? `${tool.namespace}/${tool.name}` : tool.name);
    else if (fn?.name) names.push(fn.name);
    // Codex groups MCP tools of one server under a namespace entry with its own `tools` list.
    if (Array.isArray(tool.tools)) {
      for (const inner of tool.tools as { name?: string }[]) if (inner.name) names.push(`${String(tool.name)}/${inner.name}`);
    }
  }
  return names;
}
