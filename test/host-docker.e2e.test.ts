import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openSessionDb } from '../src/db/connection.js';
import type { InboundRow } from '../src/db/types.js';
import { buildRunnerImage, dockerAvailable, startDockerDaemon, type DockerDaemon } from './support/docker-daemon.js';
import { startHost, stopAllHosts } from './support/host-harness.js';
import { waitFor } from './support/wait.js';

/**
 * Runners in real Docker containers (PINCER_RUNNER=docker), on a private daemon with an image built offline from
 * this machine's Node. Skipped where Docker is not installed (Debian's docker.io; see CONTAINER-NOTES.md).
 */
const IMAGE = 'pincer-runner-test';
let daemon: DockerDaemon;

describe.skipIf(!dockerAvailable())('pincer host with Docker runners', () => {
  beforeAll(async () => {
    daemon = await startDockerDaemon();
    buildRunnerImage(daemon, IMAGE);
  }, 300_000);

  afterAll(async () => {
    await daemon?.stop();
  }, 60_000);

  afterEach(async () => {
    expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
    expect(daemon.docker('ps', '-a', '--format', '{{.Names}}').trim()).toBe('');
  });

  it('answers through a runner in a container, recovers from the container being killed, and removes it on stop', async () => {
    const host = await startHost({ PINCER_RUNNER: 'docker', PINCER_DOCKER_IMAGE: IMAGE, DOCKER_HOST: daemon.host, MOCK_DELAY_MS: '1500' });
    const stream = host.stream('boxed');
    const res = await host.request('POST', '/v1/conversations/boxed/messages', { text: 'hello container' });
    const { sessionId, id } = res.body as { sessionId: string; id: string };
    const db = openSessionDb(path.join(host.sessionDir(sessionId), 'session.db'), { readonly: true });
    const state = await waitFor('batch in flight in the container', () => {
      const row = db.prepare('SELECT pid, batch_ids FROM runner_state').get() as { pid: number; batch_ids: string } | undefined;
      return row && JSON.parse(row.batch_ids).includes(id) ? row : undefined;
    }, { timeoutMs: 20_000 });
    // The runner's pid is a pid inside the container, not the docker client the host started.
    expect(host.runnerPids()).not.toContain(state.pid);
    expect(daemon.docker('ps', '--format', '{{.Names}}').trim()).toBe(`pincer-${sessionId}`);
    daemon.docker('kill', `pincer-${sessionId}`);
    const reply = await stream.waitFor('reply from the next container', (e) => e.event === 'chat', 30_000);
    expect(reply.data.text).toContain('hello container');
    const row = db.prepare('SELECT * FROM messages_in WHERE id = ?').get(id) as InboundRow;
    db.close();
    expect(row).toMatchObject({ status: 'completed', tries: 2 });
    expect(host.stderr()).toMatch(/container pincer-s-/);
    expect(host.stderr()).toMatch(/exited unexpectedly/);
    stream.close();
    expect(await host.stop()).toBe(0);
  }, 120_000);
});
