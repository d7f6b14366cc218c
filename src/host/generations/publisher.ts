import { errorMessage, type Logger } from '../../shared/log.js';
import type { AgentGroup } from '../central-db/types.js';
import { PincerError } from '../../shared/errors.js';
import { buildGeneration, inputsOf } from './build.js';
import type { SelectionMemo } from './catalogue.js';
import type { DeclaredModels } from './extensions.js';
import type { BuildFailure, GenerationView, HostCredentials, ModelGeneration } from './types.js';
import { isPincerError } from '../../shared/errors.js';

export interface PublisherDeps {
  /** read the host's credentials now (throws a one-line `config` error on a bad secrets file) */
  readCredentials(previous: HostCredentials | undefined): HostCredentials;
  /** the agent groups as the central DB has them now */
  groups(): AgentGroup[];
  /** whether a group's folder declares extensions */
  hasExtensions(group: AgentGroup): boolean;
  /** the models the group folder's extensions declare (read at each admission: a change publishes the next generation) */
  extensionModels?(group: AgentGroup): DeclaredModels;
  log: Logger;
  /** a generation was published (the caller writes the public view where other processes read it) */
  onPublish?(generation: ModelGeneration): void;
  /** lets the event loop run between two groups of a pass (default: setImmediate) */
  yieldTurn?(): Promise<void>;
  now?: () => Date;
}

/** Per group: what is published, and the last build that did not replace it. */
interface Slot {
  published?: ModelGeneration;
  failure?: BuildFailure;
}

/**
 * The one owner of every group's model-runtime generation. A generation is built whole and only then replaces the
 * published one (a reader sees the old one or the new one, never parts of both); a build that fails keeps the last
 * good generation serving and is reported (log line, `lastFailure` in the view); a pass superseded by a newer change
 * is dropped where it is (the newer pass publishes instead). Readers never wait: {@link admit} answers from what is
 * published, and when nothing usable is and nothing changed since the last try it fails at once with a retryable
 * error ({@link PincerError} `not-ready`).
 */
export class GenerationPublisher {
  private credentials: HostCredentials | undefined;
  private credentialsFailure: BuildFailure | undefined;
  private readonly slots = new Map<string, Slot>();
  /** bumped by every change that needs a pass; a pass that sees it move stops */
  private passSeq = 0;
  private pass: Promise<void> | null = null;
  /** selections made from the current credentials (probing the providers is the dear part of a build) */
  private memo: { version: number; selections: SelectionMemo } | undefined;

  constructor(private readonly deps: PublisherDeps) {}

  /** The credentials of the newest successful read (what a new generation is built from). */
  currentCredentials(): HostCredentials | undefined {
    return this.credentials;
  }

  /** Why the last read of the credentials failed (the previous ones keep serving), if it did. */
  credentialsProblem(): BuildFailure | undefined {
    return this.credentialsFailure;
  }

  /**
   * Read the credentials now (host start). Throws their one-line error when the read fails and there are no previous
   * credentials to keep serving.
   */
  loadCredentials(): HostCredentials {
    if (!this.refreshCredentials() && !this.credentials) throw new PincerError('config', this.credentialsFailure!.error);
    return this.credentials!;
  }

  /** Build every group now, in one go (host start: nothing runs yet), from the credentials read last. */
  publishAllNow(): void {
    this.loadCredentials();
    for (const group of this.deps.groups()) this.publishGroup(group, this.selections());
  }

  /**
   * Something changed (the secrets store, a credential file, a group's configuration): read the credentials again and
   * publish the groups whose inputs moved, one group per event-loop turn. Returns when the newest pass is done; a pass
   * still running is dropped at its next group.
   */
  async republish(reason: string): Promise<void> {
    const seq = ++this.passSeq;
    const before = this.credentials?.version;
    this.refreshCredentials();
    if (this.credentials?.version !== before) this.deps.log.info(`model runtime: credentials changed (${reason}); publishing new generations`);
    const previous = this.pass;
    const run = (async () => {
      await previous?.catch(() => undefined); // the previous pass logged its own failure; this one starts afresh
      for (const group of this.deps.groups()) {
        if (seq !== this.passSeq) return; // superseded: the newer pass publishes
        const slot = this.slots.get(group.id);
        if (!this.credentials || slot?.published?.inputs === this.inputsFor(group, this.credentials)) continue;
        this.publishGroup(group, this.selections());
        await (this.deps.yieldTurn ?? nextTurn)();
      }
    })();
    this.pass = run;
    await run;
  }

  /**
   * The generation a runner of `group` (as the central DB has it now) starts with. A group whose configuration changed
   * since its generation was built is rebuilt first (one group: no pass). When a build fails the last good generation
   * is returned. When there is none, a {@link PincerError} `not-ready` says why — at once, without building again, while
   * neither the group's configuration nor the credentials changed since that failure.
   */
  admit(group: AgentGroup): ModelGeneration {
    const credentials = this.credentials;
    const slot = this.slots.get(group.id);
    if (!credentials)
      throw new PincerError('not-ready', `agent group ${group.name}: no credentials could be read (${this.credentialsFailure?.error ?? 'not read yet'})`);
    const inputs = this.inputsFor(group, credentials);
    if (slot?.published?.inputs === inputs) return slot.published;
    if (slot?.failure?.inputs !== inputs) this.publishGroup(group, this.selections());
    const now = this.slots.get(group.id);
    if (now?.published) return now.published;
    throw new PincerError('not-ready', `agent group ${group.name} has no model runtime yet: ${now?.failure?.error ?? 'not built yet'}`);
  }

  /** The published generation of a group, if any (no build). */
  published(groupId: string): ModelGeneration | undefined {
    return this.slots.get(groupId)?.published;
  }

  /** What readers outside the host see of `group`'s generation (brought up to date first, as {@link admit}). */
  view(group: AgentGroup): GenerationView {
    try {
      this.admit(group);
    } catch (err) {
      if (!(err instanceof PincerError && err.code === 'not-ready')) throw err;
    }
    const slot = this.slots.get(group.id);
    const generation = slot?.published;
    const stale = this.credentials === undefined || generation?.inputs !== this.inputsFor(group, this.credentials);
    const failure = slot?.failure ?? this.credentialsFailure ?? null;
    return viewOf(group, generation, stale, failure);
  }

  /**
   * The publish state of `group` now: its configuration, the credentials, and its extensions' declared models. A
   * declaration that cannot be read is a state of its own (its build fails once, and not again until it changes).
   */
  private inputsFor(group: AgentGroup, credentials: HostCredentials): string {
    let digest = '';
    try {
      digest = this.deps.extensionModels?.(group).digest ?? '';
    } catch (err) {
      digest = `unusable (${errorMessage(err)})`;
    }
    return inputsOf(group, credentials, digest);
  }

  /** The selection memo of the current credentials (a new one when they changed). */
  private selections(): SelectionMemo {
    const version = this.credentials?.version ?? 0;
    if (this.memo?.version !== version) this.memo = { version, selections: new Map() };
    return this.memo.selections;
  }

  /** Build `group` now and publish it if the build succeeds; a failure is recorded and logged, the old one stays. */
  private publishGroup(group: AgentGroup, memo: SelectionMemo): void {
    const credentials = this.credentials!;
    const slot = this.slots.get(group.id) ?? {};
    this.slots.set(group.id, slot);
    const inputs = this.inputsFor(group, credentials);
    let generation: ModelGeneration;
    try {
      generation = buildGeneration({
        group,
        number: (slot.published?.number ?? 0) + 1,
        credentials,
        hasExtensions: this.deps.hasExtensions(group),
        extensionModels: this.deps.extensionModels?.(group).models ?? [],
        memo,
        now: this.deps.now,
      });
    } catch (err) {
      if (!isPincerError(err, 'config')) throw err; // a configuration no generation can be built from
      slot.failure = { at: (this.deps.now?.() ?? new Date()).toISOString(), inputs, error: err.message };
      const kept = slot.published ? `generation ${slot.published.number} keeps serving` : 'no generation to serve yet';
      this.deps.log.error(`model runtime: ${err.message} (${kept})`);
      return;
    }
    // The one place a generation is published: one assignment, after the whole build succeeded.
    slot.published = generation;
    slot.failure = undefined;
    this.deps.log.info(
      `model runtime: agent group ${group.name} generation ${generation.number} (${generation.catalogue.filter((m) => m.available).length} of ${generation.catalogue.length} models available; ${generation.inputs})`,
    );
    try {
      this.deps.onPublish?.(generation);
    } catch (err) {
      // the published view for other processes is a copy: the generation serves in this process all the same
      this.deps.log.warn(`model runtime: could not write the published catalogue of ${group.name}: ${errorMessage(err)}`);
    }
  }

  /** Read the credentials; true when the read succeeded. A failed read keeps the previous ones and says why. */
  private refreshCredentials(): boolean {
    try {
      this.credentials = this.deps.readCredentials(this.credentials);
      this.credentialsFailure = undefined;
      return true;
    } catch (err) {
      const error = errorMessage(err);
      const inputs = `credentials after ${this.credentials?.version ?? 0}`;
      // with nothing read before (host start) the caller refuses to start with this one line instead
      if (this.credentials && this.credentialsFailure?.error !== error) {
        this.deps.log.error(`model runtime: ${error} (credentials ${this.credentials.version} keep serving)`);
      }
      this.credentialsFailure = { at: (this.deps.now?.() ?? new Date()).toISOString(), inputs, error };
      return false;
    }
  }
}

export function viewOf(group: AgentGroup, generation: ModelGeneration | undefined, stale: boolean, failure: BuildFailure | null): GenerationView {
  const selection = generation?.selection;
  return {
    group: group.name,
    groupId: group.id,
    generation: generation?.number ?? null,
    builtAt: generation?.builtAt ?? null,
    stale,
    lastFailure: failure,
    credentials: generation ? [...generation.credentials.sources].map(([name, source]) => ({ name, source })) : [],
    model: generation?.model ?? null,
    selection: !selection
      ? null
      : selection.ok
        ? { ok: true, provider: selection.provider, reason: selection.reason }
        : { ok: false, code: selection.code, message: selection.message },
    models: generation ? generation.catalogue.map((model) => ({ ...model })) : [],
  };
}

function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
