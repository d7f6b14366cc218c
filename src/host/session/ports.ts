import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from '../../shared/log.js';
import type { CentralStore } from '../central-db/store.js';
import type { SessionRecord } from '../central-db/types.js';
import type { CredentialProxy } from '../credential-proxy.js';
import { SessionCluster } from '../kubernetes/cluster.js';
import { KubernetesSessionPort } from '../kubernetes/port.js';
import type { KubernetesSettings } from '../kubernetes/settings.js';
import type { SessionDirectory } from '../sessions.js';
import type { TraceRelay } from '../trace-relay.js';
import type { HostConfig } from '../types.js';
import { SessionEngine } from './engine.js';
import { LocalSessionPort } from './local-port.js';
import type { SessionPort } from './port.js';
import type { RunnerSupervisor } from './runners.js';
import { ServedSessionPort } from './served-port.js';

/**
 * A session's port in the host's runner kind: the folder on this machine with its engine in the host (local), a
 * `pincer session-serve` process per session (session-serve), or a pod per launch (kubernetes).
 */
export interface PortParts {
  config: HostConfig;
  store: CentralStore;
  sessions: SessionDirectory;
  supervisor: RunnerSupervisor;
  credentials: CredentialProxy | undefined;
  traceRelay: TraceRelay | undefined;
  /** tell the session's chat (launch failures, a volume that is not free yet). */
  notify: (session: SessionRecord, text: string) => void;
  log: Logger;
}

export class SessionPorts {
  private cluster: Promise<SessionCluster> | undefined;

  constructor(private readonly parts: PortParts) {}

  /** The session's port, and its engine when the host runs it itself. An unsafe session folder throws (quarantine). */
  async open(session: SessionRecord): Promise<{ port: SessionPort; engine?: SessionEngine }> {
    const { config } = this.parts;
    if (config.sessionPort.kind === 'kubernetes') return { port: await this.kubernetes(session, config.sessionPort.kubernetes, config.sessionPort.orphanMs) };
    const launch = {
      groupDir: this.parts.sessions.groupDirOf(session),
      globalDir: path.join(config.home, 'global'),
      logFile: runnerLogFile(config.home, session.id),
      lockFile: launchLockFile(config.home, session.id),
    };
    if (config.sessionPort.kind === 'session-serve') {
      const port = new ServedSessionPort({
        session: { id: session.id, folder: session.folder },
        config,
        launch,
        nextEpoch: () => this.parts.store.nextEpoch(session.id),
        credentials: this.parts.credentials,
        traceRelay: this.parts.traceRelay,
        filesDir: path.join(config.home, 'tmp', 'outbox'),
        orphanMs: config.sessionPort.orphanMs,
        lockFile: launchLockFile(config.home, `${session.id}.serve`),
        log: this.parts.log,
        onLaunchFailures: (failures, why) =>
          this.parts.notify(session, `The agent's session could not be started (${failures} failures in a row: ${why}); retrying with back-off.`),
      });
      return { port };
    }
    const engine = new SessionEngine({
      session: { id: session.id, folder: session.folder },
      config,
      supervisor: this.parts.supervisor,
      launch,
      log: this.parts.log,
      restoreFolder: () => this.parts.sessions.restoreFolder(session),
    });
    return { port: new LocalSessionPort(engine), engine };
  }

  /** Let go of what the ports share (the cluster's pod watch); each port is closed by its pipeline. */
  async close(): Promise<void> {
    const cluster = await this.cluster?.catch(() => undefined); // a cluster that never connected has nothing to close
    await cluster?.close();
  }

  /** The session on Kubernetes: its pods started (and let go when idle) through the cluster the settings name. */
  private async kubernetes(session: SessionRecord, settings: KubernetesSettings, orphanMs: number): Promise<SessionPort> {
    this.cluster ??= SessionCluster.connect(settings, this.parts.log);
    const cluster = await this.cluster;
    const { store } = this.parts;
    const notify = (text: string): void => this.parts.notify(session, text);
    return new KubernetesSessionPort({
      session: { sessionId: session.id, groupFolder: store.getAgentGroup(session.agentGroupId)?.folder ?? 'main' },
      config: this.parts.config,
      settings,
      cluster,
      nextEpoch: () => store.nextEpoch(session.id),
      currentEpoch: () => store.launchStateOf(session.id).epoch,
      nextWakeAt: store.launchStateOf(session.id).nextWakeAt,
      credentials: this.parts.credentials,
      filesDir: path.join(this.parts.config.home, 'tmp', 'outbox'),
      orphanMs,
      log: this.parts.log,
      onLaunchFailures: (failures, why) =>
        notify(
          `The agent's session could not be started on Kubernetes (${failures} failure(s) in a row: ${why}); retrying with back-off. Messages sent meanwhile are kept.`,
        ),
      onPodEvent: (reason, message) => {
        if (reason === 'FailedAttachVolume') notify(`The agent's session is waiting for its volume (${message}); it answers once Kubernetes lets go of it.`);
      },
    });
  }
}

/** `<home>/logs/<session id>.log`: where the agent cannot plant a link (the session id is the host's own). */
export function runnerLogFile(home: string, sessionId: string): string {
  const dir = path.join(home, 'logs');
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  return path.join(dir, `${sessionId}.log`);
}

/**
 * `<home>/locks/<name>.lock`: a launch lock held by the OS (src/container/handle.ts): `<session id>` for its runner,
 * `<session id>.serve` for its session-serve process.
 */
export function launchLockFile(home: string, name: string): string {
  const dir = path.join(home, 'locks');
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  return path.join(dir, `${name}.lock`);
}
