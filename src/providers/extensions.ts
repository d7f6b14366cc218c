import { pathToFileURL } from 'node:url';
import type { ModelRoute } from '../runtime/model-route.js';
import type { ExtensionResource, ResourceDiagnostic } from '../runtime/resources/types.js';
import { errorMessage } from '../shared/log.js';
import { knownProviders, normaliseProviderName, registerProvider } from './registry.js';
import type { AgentProvider, ExtensionTool, ProviderConfig } from './types.js';

export type { ExtensionTool, ExtensionToolResult } from './types.js';

/**
 * Extensions: JavaScript modules of the agent group's resource package that
 * the runner imports before it chooses its runtime. A module's default export (or its `register` export) is called
 * with the API below and may register harnesses — further runtime ids with the model routes they support — and tools
 * for the built-in runtime. Extension code runs in the runner, inside the agent's sandbox; the host and `pincer
 * doctor` only list the files, they never import them. A module that fails is reported, the others still load.
 */
export interface ExtensionHarness {
  /** the runtime id, e.g. `echo`: lower case letters, digits and `-` */
  id: string;
  aliases?: string[];
  /** whether this harness runs a model route; `auto` picks it for routes it supports */
  supportsRoute?(route: ModelRoute): boolean;
  /** whether it can run here (a key it needs); default yes */
  hasCredentials?(env: Record<string, string | undefined>, route?: ModelRoute): boolean;
  create(config: ProviderConfig): AgentProvider | Promise<AgentProvider>;
}

export interface ExtensionApi {
  registerHarness(harness: ExtensionHarness): void;
  registerTool(tool: ExtensionTool): void;
  log(message: string): void;
}

export interface LoadedExtensions {
  /** `<file name>: harness echo, tool word_count` per module that loaded */
  loaded: string[];
  tools: ExtensionTool[];
  harnesses: string[];
  diagnostics: ResourceDiagnostic[];
}

const ID = /^[a-z][a-z0-9-]{0,39}$/;
const TOOL_NAME = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;

export async function loadExtensions(extensions: readonly ExtensionResource[], log: (message: string) => void): Promise<LoadedExtensions> {
  const result: LoadedExtensions = { loaded: [], tools: [], harnesses: [], diagnostics: [] };
  for (const extension of extensions) {
    const problem = (message: string): void => void result.diagnostics.push({ code: 'extension-failed', message: `extension ${extension.file}: ${message}` });
    const registered: string[] = [];
    try {
      const module = (await import(pathToFileURL(extension.file).href)) as { default?: unknown; register?: unknown };
      const register = typeof module.default === 'function' ? module.default : module.register;
      if (typeof register !== 'function') {
        problem('exports no function (export default function (pincer) { … })');
        continue;
      }
      const api: ExtensionApi = {
        registerHarness: (harness) => {
          const id = typeof harness?.id === 'string' ? harness.id : '';
          if (!ID.test(id)) return problem(`harness id "${id}" is not a usable runtime id (lower case letters, digits, -)`);
          if (knownProviders().includes(id) || normaliseProviderName(id) !== id)
            return problem(`harness "${id}" collides with a runtime Pincer already has; ignored`);
          if (typeof harness.create !== 'function') return problem(`harness "${id}" has no create()`);
          registerProvider({
            name: id,
            aliases: (harness.aliases ?? []).filter((alias) => ID.test(alias) && normaliseProviderName(alias) === alias),
            create: (config) => harness.create(config),
            supportsRoute: harness.supportsRoute ? (route) => safely(() => harness.supportsRoute!(route), false) : undefined,
            hasCredentials: harness.hasCredentials ? (env, route) => safely(() => harness.hasCredentials!(env, route), false) : undefined,
            requirements: { credentialsEnv: [], packages: [], executables: [], auto: false },
          });
          result.harnesses.push(id);
          registered.push(`harness ${id}`);
        },
        registerTool: (tool) => {
          if (!TOOL_NAME.test(tool?.name ?? '') || tool.name.startsWith('mcp__')) return problem(`tool name "${String(tool?.name)}" is not usable`);
          if (typeof tool.execute !== 'function') return problem(`tool "${tool.name}" has no execute()`);
          if (result.tools.some((t) => t.name === tool.name)) return problem(`tool "${tool.name}" is registered twice; the first wins`);
          result.tools.push({ ...tool, description: String(tool.description ?? tool.name), parameters: tool.parameters ?? { type: 'object', properties: {} } });
          registered.push(`tool ${tool.name}`);
        },
        log: (message) => log(`[${extension.name}] ${String(message)}`),
      };
      await register(api);
      result.loaded.push(`${extension.name}${registered.length ? `: ${registered.join(', ')}` : ''}`);
    } catch (err) {
      problem(`failed to load: ${errorMessage(err)}`);
    }
  }
  return result;
}

function safely<T>(fn: () => T, fallback: T): T {
  try {
    return fn();
  } catch {
    // a hook that throws counts as one that gave nothing: the fallback
    return fallback;
  }
}
