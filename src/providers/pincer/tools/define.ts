import type { AgentTool } from '@mariozechner/pi-agent-core';
import type { TSchema } from '@mariozechner/pi-ai';

/**
 * A tool typed by its own parameter schema, stored among tools of any schema. pi-agent-core validates the arguments
 * against `parameters` before `execute` runs, so `execute` may rely on the schema's static type.
 */
export function defineTool<T extends TSchema>(tool: AgentTool<T>): AgentTool {
  return tool as unknown as AgentTool;
}
