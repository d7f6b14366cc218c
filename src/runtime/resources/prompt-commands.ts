import type { LoadedResources, PromptResource, SkillResource } from './types.js';

/**
 * What the runner does with loaded resources: prompts become slash commands (`/name args` → the template with
 * `$ARGUMENTS` replaced), skills become a system-prompt section for providers that do not load skills themselves.
 */

/** The text a `/name args` command stands for. Without `$ARGUMENTS` in the template, arguments follow on a new line. */
export function expandPrompt(prompt: PromptResource, args: string): string {
  const trimmed = args.trim();
  if (prompt.template.includes('$ARGUMENTS')) return prompt.template.replaceAll('$ARGUMENTS', trimmed);
  return trimmed ? `${prompt.template}\n\n${trimmed}` : prompt.template;
}

/** The system-prompt section listing the skills; the agent reads a skill's file when its description matches. */
export function skillsSection(skills: readonly SkillResource[]): string | undefined {
  if (skills.length === 0) return undefined;
  const lines = skills.map((skill) => `- ${skill.name}: ${skill.description} (instructions: ${skill.file})`);
  return ['## Skills', 'These skills are installed. When a task matches a skill, read its instructions file first and follow it.', ...lines].join('\n');
}

/** One log line: what was loaded from where. */
export function describeResources(resources: LoadedResources): string {
  const names = (items: { name: string }[], prefix = '') => (items.length ? ` (${items.map((i) => prefix + i.name).join(', ')})` : '');
  const { skills, prompts, sources, extensions, themes, theme } = resources;
  return (
    `resources: ${skills.length} skill${skills.length === 1 ? '' : 's'}${names(skills)} from ${sources.skills}, ` +
    `${prompts.length} prompt${prompts.length === 1 ? '' : 's'}${names(prompts, '/')} from ${sources.prompts}` +
    (extensions.length ? `, ${extensions.length} extension${extensions.length === 1 ? '' : 's'}${names(extensions)} from ${sources.extensions}` : '') +
    (themes.length || theme.name !== 'dark'
      ? `, ${themes.length} theme${themes.length === 1 ? '' : 's'}${names(themes)} from ${sources.themes}, theme ${theme.name}`
      : '') +
    (resources.diagnostics.length ? `, ${resources.diagnostics.length} problem${resources.diagnostics.length === 1 ? '' : 's'}` : '')
  );
}
