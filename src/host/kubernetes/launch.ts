import type { V1Pod } from '@kubernetes/client-node';
import { errorMessage, type Logger } from '../../shared/log.js';
import { RemoteSessionPort } from '../session/remote-port.js';
import type { LaunchDocument } from '../session/serve-protocol.js';
import type { SessionCluster } from './cluster.js';
import { buildClaim, buildPod, buildSecret, EPOCH_LABEL, LAUNCH_KEY, launchName, launchSelector, type SessionObjects } from './manifests.js';
import type { KubernetesSettings } from './settings.js';
import { PincerError } from '../../shared/errors.js';

/** One launch of a session: its pod (and Secret, same name) and the session port to it over the pod's IP. */
export interface PodLaunch {
  name: string;
  epoch: number;
  url: string;
  token: string;
  port: RemoteSessionPort;
}

/** A launch that cannot succeed until someone changes something (an image that cannot be pulled, a bad spec). */
export class LaunchError extends PincerError {
  constructor(
    message: string,
    /** kept as a subclass for this: the launcher stops retrying a launch that cannot succeed. */
    readonly permanent: boolean,
    /** the pod did not serve in time: the chat waited that long already, it is told at once. */
    readonly timedOut = false,
  ) {
    super(permanent ? 'config' : 'unavailable', message);
    this.name = 'LaunchError';
  }
}

/** Container waiting reasons that retrying the same pod spec will not fix. */
const STUCK_REASONS = new Set([
  'ErrImagePull',
  'ImagePullBackOff',
  'InvalidImageName',
  'ErrImageNeverPull',
  'CreateContainerConfigError',
  'CreateContainerError',
]);
/** Event reasons worth telling the log about while a pod starts (the volume is still attached elsewhere, …). */
const REPORTED_EVENTS = new Set(['FailedAttachVolume', 'FailedMount', 'FailedScheduling']);
const EVENTS_EVERY_MS = 1000;

export interface LaunchContext {
  cluster: SessionCluster;
  settings: KubernetesSettings;
  session: SessionObjects;
  stopGraceMs: number;
  filesDir: string;
  log: Logger;
  /** a pod event worth a word (Multi-Attach, FailedScheduling), once per event. */
  onPodEvent(reason: string, message: string): void;
}

/** Claim (if new), Secret, Pod; then wait until the pod serves. A launch that fails is cleaned up before it throws. */
export async function startLaunch(ctx: LaunchContext, epoch: number, doc: LaunchDocument): Promise<PodLaunch> {
  const { cluster, settings, session } = ctx;
  const name = launchName(session.sessionId, epoch);
  const claim = await cluster.ensureClaim(buildClaim(settings, session));
  if (claim === 'created') ctx.log.info(`session ${session.sessionId}: created claim for its folder (${settings.storageSize}, ${settings.accessMode})`);
  await cluster.createSecret(buildSecret(session, epoch, doc));
  try {
    await cluster.createPod(buildPod(settings, session, epoch, ctx.stopGraceMs));
    const ip = await waitUntilServing(ctx, name);
    const url = `http://${ip.includes(':') ? `[${ip}]` : ip}:${settings.endpointPort}`;
    const port = new RemoteSessionPort({ sessionId: session.sessionId, url, token: doc.token, epoch, filesDir: ctx.filesDir });
    return { name, epoch, url, token: doc.token, port };
  } catch (err) {
    await endLaunch(ctx, name, 0).catch((e: unknown) => ctx.log.warn(`session ${session.sessionId}: cleaning up ${name}: ${errorMessage(e)}`));
    throw err;
  }
}

/** Delete a launch's pod (grace 0: it stopped answering, its node may be gone) and its Secret (its bearer goes with it). */
export async function endLaunch(ctx: LaunchContext, name: string, gracePeriodSeconds?: number): Promise<void> {
  await ctx.cluster.deletePod(name, gracePeriodSeconds);
  await ctx.cluster.deleteSecret(name);
}

/**
 * What a restarted host finds of the session: the launch of `epoch` if its pod is ready (adopted, not started again),
 * and whether anything else was found (deleted now: an earlier launch that was never drained may have left work).
 */
export async function adoptLaunch(ctx: LaunchContext, epoch: number): Promise<{ adopted: PodLaunch | null; leftovers: number }> {
  const { cluster, session } = ctx;
  const pods = await cluster.listPods(launchSelector(session.sessionId));
  let adopted: PodLaunch | null = null;
  let leftovers = 0;
  for (const pod of pods) {
    const name = pod.metadata?.name ?? '';
    const ip = pod.status?.podIP;
    if (!adopted && epoch > 0 && pod.metadata?.labels?.[EPOCH_LABEL] === String(epoch) && !pod.metadata?.deletionTimestamp && isReady(pod) && ip) {
      const token = await tokenOf(ctx, name);
      if (token) {
        const url = `http://${ip.includes(':') ? `[${ip}]` : ip}:${ctx.settings.endpointPort}`;
        adopted = { name, epoch, url, token, port: new RemoteSessionPort({ sessionId: session.sessionId, url, token, epoch, filesDir: ctx.filesDir }) };
        continue;
      }
    }
    leftovers += 1;
    await endLaunch(ctx, name, 0);
  }
  // Secrets of launches whose pods are gone.
  const live = new Set(pods.map((p) => p.metadata?.name));
  for (const secret of await cluster.listSecrets(launchSelector(session.sessionId))) {
    const name = secret.metadata?.name;
    if (name && !live.has(name)) await cluster.deleteSecret(name);
  }
  return { adopted, leftovers };
}

async function tokenOf(ctx: LaunchContext, name: string): Promise<string | null> {
  const secret = await ctx.cluster.readSecret(name);
  const encoded = secret?.data?.[LAUNCH_KEY];
  if (!encoded) return null;
  try {
    const doc = JSON.parse(Buffer.from(encoded, 'base64').toString('utf8')) as { token?: unknown };
    return typeof doc.token === 'string' ? doc.token : null;
  } catch {
    return null; // not a launch document of ours: the launch is ended instead of adopted
  }
}

function isReady(pod: V1Pod): boolean {
  return pod.status?.phase === 'Running' && (pod.status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
}

/**
 * The pod's IP once it is ready, as the host's pod watch hears it (no polling); a pod that ended, cannot start, was
 * deleted, or is not ready in time is an error saying why. Its warning events (Multi-Attach, scheduling) are listed
 * meanwhile and reported once each.
 */
async function waitUntilServing(ctx: LaunchContext, name: string): Promise<string> {
  const { cluster, settings, session } = ctx;
  const seenEvents = new Set<string>();
  let last = 'not seen by the pod watch yet';
  let unlisten = (): void => undefined;
  let eventsTimer: NodeJS.Timeout | undefined;
  let deadline: NodeJS.Timeout | undefined;
  let listing = false;
  const reportEvents = async (): Promise<void> => {
    if (listing) return;
    listing = true;
    try {
      for (const event of await cluster.podEvents(name)) {
        const key = event.metadata?.uid ?? `${event.reason}:${event.message}`;
        if (seenEvents.has(key) || !REPORTED_EVENTS.has(event.reason ?? '')) continue;
        seenEvents.add(key);
        last = `${last.split(',')[0]}, ${event.reason}: ${event.message ?? ''}`;
        ctx.log.warn(`session ${session.sessionId}: pod ${name}: ${event.reason}: ${event.message ?? ''}`);
        ctx.onPodEvent(event.reason ?? '', event.message ?? '');
      }
    } catch (err) {
      ctx.log.warn(`session ${session.sessionId}: listing the events of pod ${name}: ${errorMessage(err)}`); // the wait goes on
    } finally {
      listing = false;
    }
  };
  try {
    return await new Promise<string>((resolve, reject) => {
      let settled = false;
      const fail = (err: LaunchError): void => {
        if (!settled) reject(err);
        settled = true;
      };
      const check = (pod: V1Pod | null | undefined): void => {
        if (settled || pod === undefined) return; // not heard of yet (the watch may still be listing)
        if (pod === null) return fail(new LaunchError(`pod ${name} was deleted before it served`, false));
        const phase = pod.status?.phase ?? 'Pending';
        const container = pod.status?.containerStatuses?.[0];
        const waiting = container?.state?.waiting;
        if (waiting?.reason && STUCK_REASONS.has(waiting.reason)) {
          return fail(
            new LaunchError(
              `pod ${name} cannot start: ${waiting.reason}${waiting.message ? ` (${waiting.message})` : ''} — check PINCER_K8S_IMAGE=${settings.image} and its pull secrets`,
              true,
            ),
          );
        }
        if (phase === 'Failed' || phase === 'Succeeded') {
          settled = true;
          const code = container?.state?.terminated?.exitCode;
          void cluster
            .podLog(name, 5)
            .catch(() => '') // no log to show: the exit code alone is reported
            .then((tail) =>
              reject(
                new LaunchError(
                  `pod ${name} exited (${code ?? phase}) before it served${tail.trim() ? `: ${tail.trim().split('\n').slice(-3).join(' | ')}` : ''}`,
                  false,
                ),
              ),
            );
          return;
        }
        if (isReady(pod) && pod.status?.podIP) {
          settled = true;
          return resolve(pod.status.podIP);
        }
        last = `${phase}${waiting?.reason ? `, ${waiting.reason}` : phase === 'Running' ? ', not ready' : ''}`;
      };
      unlisten = cluster.pods.on(name, check);
      check(cluster.pods.get(name));
      eventsTimer = setInterval(() => void reportEvents(), EVENTS_EVERY_MS);
      deadline = setTimeout(
        () => fail(new LaunchError(`pod ${name} did not serve within ${settings.startTimeoutMs} ms (PINCER_K8S_START_TIMEOUT_MS; last: ${last})`, false, true)),
        settings.startTimeoutMs,
      );
    });
  } finally {
    unlisten();
    clearInterval(eventsTimer);
    clearTimeout(deadline);
  }
}
