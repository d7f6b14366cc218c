import { z } from 'zod';

/**
 * Model entries and provider entries of `config.json` (part of the session folder's contract): per model (`models`,
 * keyed by the model as written in `model`) or per model provider (`modelProviders`, keyed by `openai`, `anthropic`,
 * `local`, …), the runtime policy and the route settings the built-in runtime uses (src/runtime/model-route.ts).
 * Keys never live here, only the name of the variable holding one: the file sits in the agent's session folder.
 */
export const MODEL_APIS = ['anthropic-messages', 'openai-responses', 'openai-completions'] as const;
export type ModelApi = (typeof MODEL_APIS)[number];

export const ModelSettingsSchema = z.strictObject({
  /** the runtime policy for this model / model provider (`auto`, `pincer`, `codex`, an extension harness id, …) */
  provider: z.string().optional(),
  api: z.enum(MODEL_APIS).optional(),
  baseUrl: z.string().optional(),
  /** the environment variable holding the key (default: the provider's usual one) */
  apiKeyEnv: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, { error: 'must be the name of an environment variable' })
    .optional(),
  /** extra request headers: authored request behaviour (keeps the route on the built-in runtime) */
  headers: z.record(z.string(), z.string()).optional(),
  contextWindow: z.number().int().positive().optional(),
  maxTokens: z.number().int().positive().optional(),
  /** request parameters the built-in runtime passes to every model request of this model */
  params: z
    .strictObject({
      temperature: z.number().min(0).max(2).optional(),
      /** output tokens per answer at most */
      maxTokens: z.number().int().positive().optional(),
      /** reasoning effort, where the API has it (OpenAI reasoning_effort, Anthropic thinking budgets) */
      reasoning: z.enum(['minimal', 'low', 'medium', 'high', 'xhigh']).optional(),
    })
    .optional(),
});
export type ModelParams = NonNullable<z.infer<typeof ModelSettingsSchema>['params']>;
export type ModelSettings = z.infer<typeof ModelSettingsSchema>;
