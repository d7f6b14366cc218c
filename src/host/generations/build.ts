import { hasProviderPrefix, isModelRouteError, resolveModelRoute } from '../../runtime/model-route.js';
import type { AgentGroup } from '../central-db/types.js';
import { groupRegistry, groupSelection, projectCatalogue, type SelectionMemo } from './catalogue.js';
import type { HostCredentials, ModelGeneration } from './types.js';
import type { ExtensionModel } from './extensions.js';
import { createHash } from 'node:crypto';
import { readSetting } from '../../shared/settings-load.js';
import { PincerError } from '../../shared/errors.js';

export interface BuildInput {
  group: AgentGroup;
  /** the number the generation gets if it is published */
  number: number;
  credentials: HostCredentials;
  /** the group folder declares extensions: they may register runtimes this host does not know (only runners run them) */
  hasExtensions: boolean;
  /** the models the group folder's extensions declare (src/host/generations/extensions.ts) */
  extensionModels?: readonly ExtensionModel[];
  /** selections already made in this pass */
  memo?: SelectionMemo;
  now?: () => Date;
}

/**
 * The publish state a build is for: a group's configuration generation, the provider of this run when it is not the
 * saved one (set without a new configuration generation), and the credentials version.
 */
export function inputsOf(group: AgentGroup, credentials: HostCredentials, extensionsDigest = ''): string {
  const run = group.savedProvider === undefined ? '' : `, provider ${group.provider} for this run`;
  const extensions = extensionsDigest ? `, extension models ${extensionsDigest}` : '';
  return `config ${group.configGeneration}${run}, credentials ${credentials.version}${extensions}`;
}

/**
 * Build one group's generation, whole, from what it is given (no I/O): the configured model's route, the prepared
 * selection, the registry and the projected catalogue, frozen. Configuration that cannot run fails the build with
 * {@link GenerationBuildError} (an unknown runtime, a model whose route is wrong, the built-in runtime with no model);
 * a runtime that is only missing its key or binary does not — the generation says so, and a key set later publishes
 * the next one.
 */
export function buildGeneration({
  group,
  number,
  credentials,
  hasExtensions,
  extensionModels = [],
  memo = new Map(),
  now = () => new Date(),
}: BuildInput): ModelGeneration {
  const model = group.model ?? (readSetting(credentials.env, 'PINCER_MODEL') || null);
  if (model && hasProviderPrefix(model)) {
    try {
      resolveModelRoute({ ref: model, env: credentials.env });
    } catch (err) {
      if (isModelRouteError(err)) throw new PincerError('config', `agent group ${group.name}: ${err.message}`);
      throw err;
    }
  }
  const key = `group\n${group.provider}\n${model ?? ''}`;
  const selection = memo.get(key) ?? groupSelection(group.provider, model, credentials);
  memo.set(key, selection);
  if (!selection.ok && (selection.code === 'config' || selection.code === 'insecure-route' || (selection.code === 'unknown' && !hasExtensions))) {
    throw new PincerError('config', `agent group ${group.name}: ${selection.message}`);
  }
  const registry = groupRegistry(model, extensionModels);
  const catalogue = projectCatalogue(registry, { policy: group.provider, model, credentials, memo });
  return deepFreeze({
    groupId: group.id,
    groupName: group.name,
    number,
    builtAt: now().toISOString(),
    inputs: inputsOf(group, credentials, digestOf(extensionModels)),
    credentials,
    model,
    selection,
    registry,
    catalogue,
  });
}

/** The digest the inputs name for `models` (the same as {@link declaredModels}'s). */
function digestOf(models: readonly ExtensionModel[]): string {
  return models.length === 0 ? '' : createHash('sha256').update(JSON.stringify(models)).digest('hex').slice(0, 16);
}

function deepFreeze<T>(value: T): T {
  if (typeof value !== 'object' || value === null || Object.isFrozen(value)) return value;
  for (const inner of Object.values(value)) deepFreeze(inner);
  return Object.freeze(value);
}
