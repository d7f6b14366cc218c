import type { ImageContent, TextContent } from '@mariozechner/pi-ai';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { truncateMiddle } from './tools/limits.js';

/**
 * An MCP tool result as the model sees it. Every content type reaches it: text; images (within `imageBytes`, else a
 * note); audio as a note (models here take no audio); embedded resources as their text, or a note for binary ones;
 * resource links as their URI; `structuredContent` as JSON when the result has no text of its own. Text is cut to
 * `maxChars`, head and tail kept.
 */
export interface ResultLimits {
  maxChars: number;
  imageBytes: number;
}

type Block = CallToolResult['content'][number];

export function toModelContent(result: CallToolResult, limits: ResultLimits): (TextContent | ImageContent)[] {
  const content = (result.content ?? []).map((block) => convert(block, limits));
  const hasText = content.some((c) => c.type === 'text');
  if (result.structuredContent !== undefined && !hasText) {
    content.push(text(JSON.stringify(result.structuredContent, null, 2), limits));
  }
  return content.length > 0 ? content : [{ type: 'text', text: '(no output)' }];
}

function convert(block: Block, limits: ResultLimits): TextContent | ImageContent {
  switch (block.type) {
    case 'text':
      return text(block.text, limits);
    case 'image': {
      const bytes = decodedBytes(block.data);
      if (bytes > limits.imageBytes) {
        return { type: 'text', text: `[image ${block.mimeType} of ${size(bytes)} left out: over the ${size(limits.imageBytes)} limit for images]` };
      }
      return { type: 'image', data: block.data, mimeType: block.mimeType };
    }
    case 'audio':
      return { type: 'text', text: `[audio ${block.mimeType}, ${size(decodedBytes(block.data))}: audio is not passed to the model]` };
    case 'resource_link':
      return {
        type: 'text',
        text: `[resource link: ${block.uri}${block.name && block.name !== block.uri ? ` "${block.name}"` : ''}${block.mimeType ? ` (${block.mimeType})` : ''}${block.description ? ` — ${block.description}` : ''}]`,
      };
    case 'resource': {
      const resource = block.resource;
      const head = `[resource ${resource.uri}${resource.mimeType ? ` (${resource.mimeType})` : ''}]`;
      if ('text' in resource && typeof resource.text === 'string') return text(`${head}\n${resource.text}`, limits);
      const blob = 'blob' in resource && typeof resource.blob === 'string' ? resource.blob : '';
      return { type: 'text', text: `${head} ${size(decodedBytes(blob))} of binary data, not shown` };
    }
    default:
      return { type: 'text', text: `[${(block as { type: string }).type} content]` };
  }
}

function text(value: string, limits: ResultLimits): TextContent {
  return { type: 'text', text: truncateMiddle(value, limits.maxChars) };
}

/** Bytes a base64 string decodes to, without decoding it. */
function decodedBytes(base64: string): number {
  const padding = base64.endsWith('==') ? 2 : base64.endsWith('=') ? 1 : 0;
  return Math.max(0, Math.floor((base64.length * 3) / 4) - padding);
}

/** `812 bytes`, `2.9 KiB`, `6.0 MiB` */
function size(bytes: number): string {
  if (bytes < 1024) return `${bytes} bytes`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}
