import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { createSessionFolder, sessionPaths } from '../db/layout.js';
import type { ConfigFile, RunnerSection } from '../db/config-file.js';
import { runnerSection } from './config.js';
import { errorMessage, type Logger } from '../shared/log.js';
import type { CentralStore, NewAgentGroup } from './central-db/store.js';
import type { AgentGroup, SessionRecord } from './central-db/types.js';
import { PincerError } from '../shared/errors.js';
import { linkInsideHome } from './home-paths.js';
import { outboundDestinations } from './outbound-reach.js';
import type { ConversationRef, HostConfig } from './types.js';

/**
 * Session routing and provisioning: inbound conversation → binding → agent group → session (one per conversation,
 * or per thread in `per-thread` mode) → a session folder whose `group/` is the group's folder (read-only to the
 * session), whose `agent/` is the session's own and whose `global/` is the home's shared folder, with the group's
 * runner configuration published into `config.json`.
 */
export class SessionDirectory {
  /** config.json's `runner` section, the same for every session: the runner settings of the runners' configuration. */
  private readonly runnerSettings: RunnerSection | undefined;

  constructor(
    private readonly store: CentralStore,
    private readonly config: HostConfig,
    private readonly log: Logger,
  ) {
    this.runnerSettings = runnerSection(config.runners.env);
  }

  /** On first start, create the default agent group (if one is configured and missing). */
  ensureDefaultGroup(): AgentGroup | undefined {
    const wanted = this.config.defaultGroup;
    if (!wanted) return undefined;
    const existing = this.store.findAgentGroup(wanted.name);
    if (!existing) return this.createGroup({ ...wanted, folder: wanted.name });
    // The environment speaks for the default group at every start: its platform rules, and admins added.
    this.store.setTriggerRules(existing.id, wanted.triggerRules);
    for (const admin of wanted.admins) this.store.addAdmin(existing.id, admin);
    return this.store.getAgentGroup(existing.id);
  }

  /** The host's `--provider` (HostConfig.runProvider), at start: before any runner of the group starts. */
  applyRunProvider(): void {
    const run = this.config.runProvider;
    const group = run && this.store.findAgentGroup(run.group);
    if (group) this.useProvider(group, run.provider, run.save);
  }

  /**
   * `--provider P`: `group` runs on P from now on (before its runners start, so they do), for this run only, or saved
   * as its provider with `save` (`--save`, a new configuration generation).
   */
  useProvider(group: AgentGroup, provider: string, save: boolean): void {
    const saved = group.savedProvider ?? group.provider;
    if (save) {
      if (saved !== provider || group.provider !== provider) this.store.updateAgentGroup(group.id, { provider });
      if (saved !== provider) this.log.info(`agent group ${group.name}: provider ${provider} saved (--provider --save; was ${saved})`);
      return;
    }
    this.store.runGroupOn(group.id, provider);
    if (saved !== provider) this.log.info(`agent group ${group.name}: provider ${provider} for this run (--provider; saved: ${saved})`);
  }

  createGroup(group: NewAgentGroup): AgentGroup {
    if (!/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/.test(group.folder)) {
      throw new PincerError('invalid-input', `folder "${group.folder}": use letters, digits, "_", "-", "." (no slashes)`, { field: 'folder' });
    }
    if (this.store.findAgentGroup(group.name)) throw new PincerError('invalid-input', `agent group "${group.name}" exists already`, { field: 'name' });
    const created = this.store.createAgentGroup(group);
    const dir = this.groupDir(created);
    fs.mkdirSync(dir, { recursive: true });
    this.log.info(`agent group ${created.name} (${created.id}) created: provider ${created.provider}, folder ${dir}`);
    return created;
  }

  groupDir(group: AgentGroup): string {
    return path.join(this.config.home, 'groups', group.folder);
  }

  /** The agent group a conversation belongs to: its binding, else the default group (bound from then on). */
  resolveGroup(conversation: ConversationRef): AgentGroup {
    const binding = this.store.getBinding(conversation.channelType, conversation.platformId);
    if (binding) {
      const group = this.store.getAgentGroup(binding.agentGroupId);
      if (group) return group;
    }
    const fallback = this.config.defaultGroup && this.store.findAgentGroup(this.config.defaultGroup.name);
    if (!fallback) {
      throw new PincerError(
        'unknown-conversation',
        `unknown conversation "${conversation.platformId}" on ${conversation.channelType}: bind it to an agent group or configure a default group (PINCER_DEFAULT_GROUP)`,
      );
    }
    this.store.bind(conversation.channelType, conversation.platformId, fallback.id);
    return fallback;
  }

  /** The session of `conversation` in `group`, provisioned on first use. `folder` overrides where a new one lives. */
  sessionFor(group: AgentGroup, conversation: ConversationRef, folder?: string): SessionRecord {
    const threadKey = group.sessionMode === 'per-thread' ? (conversation.threadId ?? '') : '';
    const found = this.store.findSession(group.id, conversation.channelType, conversation.platformId, threadKey);
    if (found) return found;
    const id = `s-${randomUUID().slice(0, 12)}`;
    const root = path.resolve(folder ?? path.join(this.config.home, 'sessions', id));
    this.provisionFolder(group, root);
    const session = this.store.insertSession({
      id,
      agentGroupId: group.id,
      channelType: conversation.channelType,
      platformId: conversation.platformId,
      threadKey,
      folder: root,
    });
    this.log.info(`session ${id} for ${conversation.channelType}:${conversation.platformId}${threadKey ? `#${threadKey}` : ''} (group ${group.name})`);
    return session;
  }

  /**
   * The group's runner configuration for a session, as one document (the port publishes it atomically: a runner reads
   * either the old file or the new one, never half of each), tagged with the group's generation. The admin user ids
   * stay out of it: the host checks admin rights itself, and the agent has no use for them.
   */
  configFor(session: SessionRecord, group: AgentGroup, modelGeneration?: number): ConfigFile {
    // The session's own MCP servers replace the group's of the same name; secret values stay references.
    const mcpServers = { ...group.mcpServers, ...session.mcpServers };
    return {
      provider: group.provider,
      timezone: group.timezone,
      assistantName: group.name,
      generation: group.configGeneration,
      ...(modelGeneration !== undefined ? { modelGeneration } : {}),
      ...(group.model ? { model: group.model } : {}),
      ...(session.providerSessionId ? { sessionId: session.providerSessionId } : {}),
      ...(Object.keys(mcpServers).length > 0 ? { mcpServers } : {}),
      destinations: outboundDestinations(this.store, session, this.config.defaultGroup?.name),
      ...(this.runnerSettings ? { runner: this.runnerSettings } : {}),
    };
  }

  /** The folder of a session's agent group. */
  groupDirOf(session: SessionRecord): string {
    const group = this.store.getAgentGroup(session.agentGroupId);
    if (!group) throw new PincerError('unknown-group', `agent group ${session.agentGroupId} of session ${session.id} is gone`);
    return this.groupDir(group);
  }

  /**
   * Put a session folder's `agent/`, `group/` and `global/` right before its runner starts (a moved home, a folder of
   * an older version whose `agent/` was the group's folder, a link the agent planted in its own folder). Named for
   * the links it once only kept.
   */
  keepLinks(session: SessionRecord): void {
    const group = this.store.getAgentGroup(session.agentGroupId);
    if (!group) return;
    try {
      this.placeFolders(group, session.folder);
    } catch (err) {
      this.log.warn(`session ${session.id}: could not set up agent/, group/ and global/: ${errorMessage(err)}`);
    }
  }

  /**
   * `agent/` is the session's own real folder, never the group's: what one conversation's agent writes there reaches
   * no other conversation (docs/security.md, "The group folder"). A child-process runner's `group/` and `global/` link,
   * relatively, into this home; a sandbox gets them mounted read-only on `group/` and `global/`, which must be real
   * folders of the session folder (never a link the agent left there).
   */
  private placeFolders(group: AgentGroup, root: string): void {
    const paths = sessionPaths(root);
    ownFolder(paths.agent, this.log);
    if (this.config.runners.kind !== 'process') {
      ownFolder(paths.group, this.log);
      return;
    }
    linkInsideHome(this.groupDir(group), paths.group, this.log);
    linkInsideHome(path.join(this.config.home, 'global'), paths.global, this.log);
  }

  /** Make a session's folder again, as at provisioning (it was deleted under the host), with an empty session.db. */
  restoreFolder(session: SessionRecord): void {
    const group = this.store.getAgentGroup(session.agentGroupId);
    if (!group) throw new PincerError('unknown-group', `agent group ${session.agentGroupId} of session ${session.id} is gone`);
    this.provisionFolder(group, session.folder);
  }

  /** The session folder: its own `agent/`, `group/` and `global/` as `placeFolders` makes them, and its session.db. */
  private provisionFolder(group: AgentGroup, root: string): void {
    fs.mkdirSync(root, { recursive: true });
    const globalDir = path.join(this.config.home, 'global');
    fs.mkdirSync(globalDir, { recursive: true });
    fs.mkdirSync(this.groupDir(group), { recursive: true });
    this.placeFolders(group, root);
    createSessionFolder(root);
  }
}

/** `dir` as a real folder: a link (the group's folder, as older versions made it) or a file there is replaced. */
function ownFolder(dir: string, log: Logger): void {
  const stat = fs.lstatSync(dir, { throwIfNoEntry: false });
  if (stat?.isDirectory()) return;
  if (stat) {
    fs.rmSync(dir, { force: true });
    log.info(`${dir}: now a folder of the session's own (was ${stat.isSymbolicLink() ? 'a link' : 'a file'})`);
  }
  fs.mkdirSync(dir);
}
