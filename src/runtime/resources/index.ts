export { findExtensions, loadResources } from './load.js';
export { describeResources, expandPrompt, skillsSection } from './prompt-commands.js';
export type * from './types.js';
export { readRuntimeSettings, type RuntimeSettings } from './manifest.js';
