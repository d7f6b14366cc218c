import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openSessionDb } from '../src/db/connection.js';
import { insertInbound } from '../src/db/messages.js';
import { pincerMcpServer } from '../src/mcp/config.js';
import { connectLinkedPincerServer } from '../src/mcp/linked.js';
import { McpConnections } from '../src/providers/pincer/mcp-tools.js';
import { MCP_SETTING_DEFAULTS } from '../src/providers/mcp-settings.js';
import type { LinkedMcpServer } from '../src/providers/types.js';
import { createLogger } from '../src/shared/log.js';
import { readRunnerState } from '../src/db/state.js';
import { closeFakeOpenAIs, startFakeOpenAI } from './support/fake-openai.js';
import { PROCESS_RUNNER, startHost, stopAllHosts } from './support/host-harness.js';
import { startOtlpReceiver, type OtlpReceiver } from './support/otlp-receiver.js';
import { descendants, processesUsing, reapSessionProcesses } from './support/processes.js';
import { BUILT_CLI, startRunner, stopAllRunners } from './support/runner-harness.js';
import { cleanupSessions, createTestSession, type TestSession } from './support/session.js';
import { waitFor } from './support/wait.js';

/**
 * The built-in runtime serves the Pincer tools inside its runner process (the MCP SDK's linked in-memory transport)
 * instead of a `pincer mcp` child: through a real host and real runners against the fake OpenAI-compatible server,
 * the tools keep their behaviour (rows written, refusals and the message size limit reaching the model as tool errors,
 * a question waiting and ending on a stop) and the session is one process. A server the runner does not offer in
 * process still starts as a child.
 */
const sessions: TestSession[] = [];
const receivers: OtlpReceiver[] = [];

afterEach(async () => {
  await Promise.all(receivers.splice(0).map((r) => r.close()));
  expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
  const runnersLeft = await stopAllRunners();
  const processesLeft = (await Promise.all(sessions.splice(0).map((s) => reapSessionProcesses(s.paths.root)))).flat();
  cleanupSessions();
  await closeFakeOpenAIs();
  expect({ runnersLeft, processesLeft }).toEqual({ runnersLeft: 0, processesLeft: [] });
});

const commandOf = (pid: number): string => {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
  } catch {
    return '(exited)';
  }
};

describe('built-in runtime: the Pincer tools in the runner process', { timeout: 90_000 }, () => {
  it('calls send_message and schedule_task, gets a refusal back as a tool error, and starts no pincer mcp child', async () => {
    const fake = await startFakeOpenAI();
    fake.script(
      { call: 'mcp__pincer__send_message', args: { text: 'working on it' } },
      { call: 'mcp__pincer__schedule_task', args: { prompt: 'water the plants', processAfter: '2099-01-01T09:00:00Z' } },
      { call: 'mcp__pincer__schedule_task', args: { prompt: 'no time given' } },
      { text: 'all done' },
    );
    // counts the runner's child processes from the host's pid of it: a sandbox adds its own (bwrap, its init)
    const host = await startHost({
      ...PROCESS_RUNNER,
      AGENT_PROVIDER: 'pincer',
      PINCER_MODEL: 'local/qwen3:8b',
      OPENAI_BASE_URL: fake.baseUrl,
      PINCER_MODEL_MAX_RETRIES: '0',
    });
    const stream = host.stream('linked');
    const sent = (await host.request('POST', '/v1/conversations/linked/messages', { text: 'please plan my week' })).body as { sessionId: string };
    await stream.waitFor('the answer', (e) => e.event === 'chat' && e.data.text === 'all done');
    const chats = stream.events.filter((e) => e.event === 'chat').map((e) => e.data.text);
    expect(chats).toEqual(['working on it', 'all done']);

    // The task row was written by the tool, in the session DB, with its time.
    const db = openSessionDb(path.join(host.sessionDir(sent.sessionId), 'session.db'), { readonly: true });
    const tasks = db.prepare("SELECT id, process_after, content FROM messages_in WHERE kind = 'task'").all() as {
      id: string;
      process_after: string;
      content: string;
    }[];
    db.close();
    expect(tasks).toHaveLength(1);
    expect(tasks[0]!.process_after).toBe('2099-01-01T09:00:00.000Z');
    expect(tasks[0]!.content).toContain('water the plants');

    // The model saw the task id, then the server's refusal of the second call as a tool error.
    const requests = fake.modelRequests().map((r) => JSON.stringify(r.body));
    expect(requests).toHaveLength(4);
    expect(requests[2]).toContain(`Task ${tasks[0]!.id} scheduled`);
    expect(requests[3]).toContain('give processAfter (when to run), or a recurrence, or both');

    // One process for the whole session: the runner, with no child (no `pincer mcp`, no agent binary).
    const [runnerPid] = host.runnerPids();
    expect(runnerPid).toBeDefined();
    expect(commandOf(runnerPid!)).toMatch(/ runner$/);
    expect(descendants(runnerPid!).map(commandOf)).toEqual([]);
    const runnerLog = fs.readFileSync(path.join(host.home, 'logs', `${sent.sessionId}.log`), 'utf8');
    expect(runnerLog).toMatch(/MCP server pincer: \d+ tools/);

    stream.close();
    expect(await host.stop()).toBe(0);
    await waitFor('runner gone', () => !fs.existsSync(`/proc/${runnerPid}`) || commandOf(runnerPid!) === '(exited)');
  });
});

describe('built-in runtime: tool spans from the in-process server', { timeout: 90_000 }, () => {
  it('each Pincer tool call is an execute_tool span of pincer-mcp under the turn, as from the child', async () => {
    const otlp = await startOtlpReceiver();
    receivers.push(otlp);
    const fake = await startFakeOpenAI();
    fake.script({ call: 'mcp__pincer__send_message', args: { text: 'working on it' } }, { text: 'all done' });
    const host = await startHost({
      AGENT_PROVIDER: 'pincer',
      PINCER_MODEL: 'local/qwen3:8b',
      OPENAI_BASE_URL: fake.baseUrl,
      OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
      // a loaded machine may take more than the default 3 s to close a runner: this test is about what a clean stop
      // exports, not the grace (test/proxy-forward.test.ts holds that nothing idle keeps a runner from exiting)
      PINCER_STOP_GRACE_MS: '20000',
    });
    const stream = host.stream('traced');
    expect((await host.request('POST', '/v1/conversations/traced/messages', { text: 'please work' })).status).toBe(202);
    await stream.waitFor('the answer', (e) => e.event === 'chat' && e.data.text === 'all done');
    stream.close();
    // The host stops as soon as the answer is out, before the runner's next batch export (every 500 ms): the runner
    // exits on its own (not killed after the grace), and its shutdown exports what it still held, through the
    // sandbox's relay, before the host closes the relay. So every span is at the collector once the stop returns.
    expect(await host.stop()).toBe(0);
    expect(host.stderr()).toMatch(/runner \d+ for \S+ stopped \(0\)/);
    const spans = [...otlp.traces().values()].flat();
    expect(spans.map((s) => s.name)).toEqual(expect.arrayContaining(['invoke_agent pincer', 'execute_tool send_message']));
    const turn = spans.find((s) => s.name === 'invoke_agent pincer')!;
    const tool = spans.find((s) => s.name === 'execute_tool send_message')!;
    expect(tool.service).toBe('pincer-mcp');
    expect(tool.parentSpanId).toBe(turn.spanId);
    expect(tool.traceId).toBe(turn.traceId);
    expect(otlp.traces().size).toBe(1);
  });
});

describe('built-in runtime: the MCP message size limit in the runner process', { timeout: 60_000 }, () => {
  it('refuses a call over 1 MiB with the same tool error as pincer mcp, and goes on serving', async () => {
    const fake = await startFakeOpenAI();
    // A card passes the tool's JSON schema whatever its size (extra fields are allowed), so only the limit stops it.
    const card = { title: 'big', blob: 'x'.repeat(1536 * 1024) };
    fake.script({ call: 'mcp__pincer__send_card', args: { card } }, { call: 'mcp__pincer__send_message', args: { text: 'still here' } }, { text: 'done' });
    const session = createTestSession('pincer-linked-');
    sessions.push(session);
    const runner = startRunner(session.paths.root, {
      AGENT_PROVIDER: 'pincer',
      PINCER_MODEL: 'local/qwen3:8b',
      OPENAI_BASE_URL: fake.baseUrl,
      PINCER_MODEL_MAX_RETRIES: '0',
    });
    await runner.ready(30_000);
    session.chat('send the big card');
    await waitFor('the answer', () => session.outbound().some((r) => r.content.includes('"done"')), { timeoutMs: 30_000 });
    expect(session.outbound().map((r) => JSON.parse(r.content) as { text?: string })).toEqual([{ text: 'still here' }, { text: 'done' }]);
    expect(JSON.stringify(fake.modelRequests()[1]!.body)).toMatch(/the call to send_card is 1\.5 MiB, over the 1 MiB limit of one MCP message: pass less/);
    expect(runner.stderr()).toMatch(/\[mcp\] warn: refused a 1\.5 MiB message \(tools\/call send_card\): over the 1 MiB limit/);
    expect(await runner.stop()).toBe(0);
  });
});

describe('built-in runtime: ask_user_question in the runner process', { timeout: 60_000 }, () => {
  const ask = { call: 'mcp__pincer__ask_user_question', args: { title: 'Confirm', question: 'Delete the old logs?', options: ['Yes', 'No'] } };
  // No polling: an answer is found because the change to session.db woke the wait, inside the runner's own process.
  const env = (baseUrl: string): Record<string, string> => ({
    AGENT_PROVIDER: 'pincer',
    PINCER_MODEL: 'local/qwen3:8b',
    OPENAI_BASE_URL: baseUrl,
    PINCER_MODEL_MAX_RETRIES: '0',
    PINCER_POLL_IDLE_MS: '60000',
    PINCER_HEARTBEAT_MS: '200',
    PINCER_STOP_GRACE_MS: '300',
  });

  async function questionAsked(session: TestSession): Promise<string> {
    const row = await waitFor('the question row', () => session.outbound().find((r) => r.content.includes('"ask_question"')), { timeoutMs: 30_000 });
    await waitFor('waiting_user', () => readRunnerState(session.db)?.state === 'waiting_user');
    return String((JSON.parse(row.content) as { questionId: string }).questionId);
  }

  it('waits without holding up the runner, and the answer reaches the model', async () => {
    const fake = await startFakeOpenAI();
    fake.script(ask, { text: 'deleted them' });
    const session = createTestSession('pincer-linked-');
    sessions.push(session);
    const runner = startRunner(session.paths.root, env(fake.baseUrl));
    await runner.ready(30_000);
    const { id } = session.chat('clean up please');
    const questionId = await questionAsked(session);
    // The runner's own timers run while the tool waits in its process: its heartbeat moves on.
    const before = readRunnerState(session.db)!.heartbeatAt;
    await waitFor('a heartbeat during the question', () => readRunnerState(session.db)!.heartbeatAt > before);
    insertInbound(session.db, { kind: 'system', content: { type: 'question_response', questionId, selectedOption: 'Yes', userId: 'u1' } });
    await waitFor('the answer', () => session.outbound().some((r) => r.content.includes('deleted them')), { timeoutMs: 30_000 });
    expect(JSON.stringify(fake.modelRequests()[1]!.body)).toContain('The user chose: Yes');
    await waitFor('completed', () => session.inbound(id).status === 'completed');
    expect(await runner.stop()).toBe(0);
  });

  it('a stop during the question ends the wait and keeps the message for a retry', async () => {
    const fake = await startFakeOpenAI();
    fake.script(ask);
    const session = createTestSession('pincer-linked-');
    sessions.push(session);
    const runner = startRunner(session.paths.root, env(fake.baseUrl));
    await runner.ready(30_000);
    const { id } = session.chat('clean up please');
    await questionAsked(session);
    expect(await runner.stop()).toBe(0);
    // The wait ended on the stop, not on its 300 s timeout; the runner's own state is the last written.
    expect(readRunnerState(session.db)?.state).toBe('stopping');
    expect(runner.stderr()).toMatch(/tool mcp__pincer__ask_user_question failed: .*abort/i);
    expect(session.inbound(id).status).toBe('processing');
  });
});

/** `pincer mcp` processes serving this session (they carry its folder in their environment). */
const mcpServersOf = (session: TestSession): string[] =>
  processesUsing(session.paths.root)
    .map((p) => p.command)
    .filter((command) => command.endsWith(' mcp'));

const options = { settings: MCP_SETTING_DEFAULTS, maxOutputChars: 10_000, log: createLogger('test') };

describe("the built-in runtime's MCP connections: in process when the runner offers it, else a child", { timeout: 60_000 }, () => {
  it.each([
    { how: 'linked', linked: true, children: 0 },
    { how: 'a child process (any server the runner cannot serve itself)', linked: false, children: 1 },
  ])('$how: the tools work and close() leaves no process', async ({ linked, children }) => {
    const session = createTestSession('pincer-linked-');
    sessions.push(session);
    const server = { ...pincerMcpServer(session.paths.root, 'UTC', {}), args: [BUILT_CLI, 'mcp'] };
    const linkedServers: Record<string, LinkedMcpServer> = linked ? { pincer: { connect: () => connectLinkedPincerServer(server.env) } } : {};
    const connections = await McpConnections.connect({ pincer: server }, linkedServers, options);
    const tools = connections.tools();
    try {
      expect(mcpServersOf(session)).toHaveLength(children);
      const send = tools.find((tool) => tool.name === 'mcp__pincer__send_message')!;
      const result = await send.execute('call-1', { text: 'from the test' });
      expect(result.content).toEqual([{ type: 'text', text: expect.stringMatching(/^Sent as message \d+/) }]);
      expect(session.outbound().map((row) => JSON.parse(row.content) as unknown)).toEqual([{ text: 'from the test' }]);
    } finally {
      await connections.close();
    }
    await waitFor('no mcp child', () => mcpServersOf(session).length === 0);
  });

  it("fails when Pincer's own server cannot start (the agent never answers without its tools); a user's server is left out", async () => {
    const session = createTestSession('pincer-linked-');
    sessions.push(session);
    const server = { ...pincerMcpServer(session.paths.root, 'UTC', {}), args: [BUILT_CLI, 'mcp'] };
    const broken: Record<string, LinkedMcpServer> = { pincer: { connect: () => Promise.reject(new Error('the session database is gone')) } };
    await expect(McpConnections.connect({ pincer: server }, broken, options)).rejects.toThrow(
      'MCP server pincer could not start: the session database is gone',
    );
    const connections = await McpConnections.connect({ mine: { command: '/nonexistent/server', args: [], env: {} } }, {}, options);
    expect(connections.tools()).toEqual([]);
    expect(connections.takeNotices()).toEqual([expect.stringMatching(/^The MCP server "mine" could not start: command not found/)]);
    await connections.close();
  });
});
