import type { V1PersistentVolumeClaim, V1Pod, V1Secret, V1VolumeMount, V1Volume } from '@kubernetes/client-node';
import type { KubernetesSettings } from './settings.js';

/**
 * The objects of a session on Kubernetes, as plain data (no API call here): its claim (the session folder, kept while
 * the session exists), and per launch a Secret (the launch document: bearer, epoch, settings, credential placeholders)
 * and a Pod running `pincer session-serve` on the claim. Every object carries the labels below, so a host adopts or
 * cleans up what it finds by label after a restart.
 */
export const MANAGED_BY = { key: 'app.kubernetes.io/managed-by', value: 'pincer' } as const;
export const SESSION_LABEL = 'pincer.dev/session';
export const EPOCH_LABEL = 'pincer.dev/epoch';
export const COMPONENT_LABEL = 'app.kubernetes.io/component';

/** Where things are inside the pod. */
export const POD_PATHS = {
  workspace: '/workspace',
  session: '/workspace/session',
  /** the group's folder, read-only, where the runner of the session folder looks for it (its `group/`). */
  group: '/workspace/session/group',
  /** the shared global folder, read-only, where the runner looks for it (the session folder's `global/`). */
  global: '/workspace/session/global',
  logFile: '/workspace/logs/runner.log',
  launchDir: '/etc/pincer/launch',
  launchFile: '/etc/pincer/launch/launch.json',
} as const;
/** The key of the launch document in the launch's Secret. */
export const LAUNCH_KEY = 'launch.json';

/** Seconds a pod stays bound to a node Kubernetes sees as not ready or unreachable (the default is 300). */
export const NODE_TOLERATION_SECONDS = 30;

export interface SessionObjects {
  sessionId: string;
  /** the agent group's folder name (under `groups/` of the shared claim). */
  groupFolder: string;
}

/** A DNS-1123 name part from a session id (ids are `s-<hex>`; anything else is folded to be safe). */
export function nameOf(sessionId: string): string {
  const folded = sessionId
    .toLowerCase()
    .replace(/[^a-z0-9-]/g, '-')
    .replace(/^-+|-+$/g, '');
  return folded.slice(0, 40) || 'session';
}

export function claimName(sessionId: string): string {
  return `pincer-${nameOf(sessionId)}`;
}

/** The pod and its Secret share one name per launch: a new launch never reuses a name that may still be Terminating. */
export function launchName(sessionId: string, epoch: number): string {
  return `pincer-${nameOf(sessionId)}-${epoch}`;
}

export function labelsOf(sessionId: string, component: 'session' | 'launch', epoch?: number): Record<string, string> {
  return {
    [MANAGED_BY.key]: MANAGED_BY.value,
    [COMPONENT_LABEL]: component === 'session' ? 'session-volume' : 'session-launch',
    [SESSION_LABEL]: nameOf(sessionId),
    ...(epoch !== undefined ? { [EPOCH_LABEL]: String(epoch) } : {}),
  };
}

/** The label selector of a session's launches (its pods and Secrets). */
export function launchSelector(sessionId: string): string {
  return `${MANAGED_BY.key}=${MANAGED_BY.value},${COMPONENT_LABEL}=session-launch,${SESSION_LABEL}=${nameOf(sessionId)}`;
}

export function buildClaim(settings: KubernetesSettings, session: SessionObjects): V1PersistentVolumeClaim {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    // No owner reference: the claim is the session's folder and outlives every launch; it goes only with the session.
    metadata: {
      name: claimName(session.sessionId),
      labels: labelsOf(session.sessionId, 'session'),
      annotations: { 'pincer.dev/session-id': session.sessionId },
    },
    spec: {
      accessModes: [settings.accessMode],
      resources: { requests: { storage: settings.storageSize } },
      ...(settings.storageClass ? { storageClassName: settings.storageClass } : {}),
    },
  };
}

export function buildSecret(session: SessionObjects, epoch: number, launchDocument: unknown): V1Secret {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: launchName(session.sessionId, epoch), labels: labelsOf(session.sessionId, 'launch', epoch) },
    type: 'Opaque',
    stringData: { [LAUNCH_KEY]: JSON.stringify(launchDocument) },
  };
}

export function buildPod(settings: KubernetesSettings, session: SessionObjects, epoch: number, stopGraceMs: number): V1Pod {
  const name = launchName(session.sessionId, epoch);
  const mounts: V1VolumeMount[] = [
    { name: 'session', mountPath: POD_PATHS.workspace },
    { name: 'launch', mountPath: POD_PATHS.launchDir, readOnly: true },
  ];
  const volumes: V1Volume[] = [
    { name: 'session', persistentVolumeClaim: { claimName: claimName(session.sessionId) } },
    { name: 'launch', secret: { secretName: name, defaultMode: 0o400 } },
  ];
  if (settings.sharedClaim) {
    // Plain files only (never SQLite) on the shared claim, read-only: the group's folder (no session writes what another
    // session of the group reads; docs/security.md, "The group folder") and global/.
    mounts.push({ name: 'shared', mountPath: POD_PATHS.group, subPath: `groups/${session.groupFolder}`, readOnly: true });
    mounts.push({ name: 'shared', mountPath: POD_PATHS.global, subPath: 'global', readOnly: true });
    volumes.push({ name: 'shared', persistentVolumeClaim: { claimName: settings.sharedClaim } });
  }
  const port = settings.endpointPort;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, labels: labelsOf(session.sessionId, 'launch', epoch), annotations: { 'pincer.dev/session-id': session.sessionId } },
    spec: {
      restartPolicy: 'Never',
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      terminationGracePeriodSeconds: Math.ceil(stopGraceMs / 1000) + 5,
      securityContext: {
        runAsNonRoot: true,
        runAsUser: settings.runAsUser,
        runAsGroup: settings.runAsUser,
        fsGroup: settings.runAsUser,
        seccompProfile: { type: 'RuntimeDefault' },
      },
      // A pod on a node that stops answering is let go after 30 s instead of 5 min (the host starts a new launch anyway).
      tolerations: ['node.kubernetes.io/not-ready', 'node.kubernetes.io/unreachable'].map((key) => ({
        key,
        operator: 'Exists',
        effect: 'NoExecute',
        tolerationSeconds: NODE_TOLERATION_SECONDS,
      })),
      ...(settings.runtimeClass ? { runtimeClassName: settings.runtimeClass } : {}),
      ...(Object.keys(settings.nodeSelector).length > 0 ? { nodeSelector: settings.nodeSelector } : {}),
      ...(settings.imagePullSecrets.length > 0 ? { imagePullSecrets: settings.imagePullSecrets.map((n) => ({ name: n })) } : {}),
      containers: [
        {
          name: 'session',
          image: settings.image,
          imagePullPolicy: settings.imagePullPolicy,
          command: [settings.command],
          // Paths only: the bearer and settings come from the Secret's file, never the command line.
          args: [
            'session-serve',
            POD_PATHS.session,
            '--launch-file',
            POD_PATHS.launchFile,
            '--listen',
            `$(POD_IP):${port}`,
            '--group-dir',
            POD_PATHS.group,
            '--global-dir',
            POD_PATHS.global,
            '--log-file',
            POD_PATHS.logFile,
          ],
          env: [{ name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } }],
          ports: [{ name: 'endpoint', containerPort: port, protocol: 'TCP' }],
          readinessProbe: { httpGet: { path: '/v1/health', port }, periodSeconds: 2, timeoutSeconds: 2, failureThreshold: 2 },
          resources: { requests: { ...settings.resources.requests }, limits: { ...settings.resources.limits } },
          securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] }, privileged: false },
          volumeMounts: mounts,
        },
      ],
      volumes,
    },
  };
}
