import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startFakeAnthropic, type FakeMessage, type FakeReply, type FakeRequest } from '../test/support/fake-anthropic.js';
import { count, cpuSampler, replies, killRunnersOf, post, sleep, startHost, stop, waitAllAnswered, type FaultRow } from './fault-host.js';

/**
 * The MCP server alone SIGKILLed: the real Claude Code CLI (the Claude provider) against a scripted fake Anthropic
 * server starts the session's `pincer mcp` for each query; the model calls its `send_message` tool for every prompt,
 * then answers. While messages stream in, the suite SIGKILLs the live `pincer mcp` processes of the host's sessions at
 * random moments. A killed server fails the tool call in flight (and any later one in that query); the query still
 * ends with its answer, and the next query starts a new server. The answer carries the message's marker; the tool's
 * text does not, so `duplicated` counts answers only.
 */
export async function mcpKillsScenario(messages: number): Promise<FaultRow> {
  const fake = await startFakeAnthropic();
  fake.script(...Array.from({ length: messages * 20 }, () => step));
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-fault-mcp-'));
  const configDir = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-fault-claude-'));
  const host = await startHost(home, {
    AGENT_PROVIDER: 'claude',
    ANTHROPIC_BASE_URL: fake.url,
    ANTHROPIC_API_KEY: 'sk-ant-fault-suite-key',
    CLAUDE_CONFIG_DIR: configDir,
    IS_SANDBOX: '1',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    CLAUDE_CODE_MAX_RETRIES: '1',
  });
  const conversations = ['mcp1', 'mcp2'];
  const accepted: string[] = [];
  const cpu = cpuSampler(() => host.child.pid);
  let kills = 0;
  try {
    for (let i = 0; i < messages; i++) {
      const marker = `[mcp-${String(i).padStart(4, '0')}]`;
      if ((await post(host.port, conversations[i % conversations.length]!, `${marker} hello`)) !== undefined) accepted.push(marker);
      // every other message on average: once a server is up, kill it at a random moment of its query — and the
      // first message always, as soon as its server is up, so even a short run kills one
      if (i === 0 || Math.random() < 0.5) {
        const deadline = Date.now() + 10_000;
        while (mcpServers(home).length === 0 && Date.now() < deadline) await sleep(20);
        if (i > 0) await sleep(Math.random() * 300);
        kills += killMcpServers(home);
      } else await sleep(100);
    }
    const faultEnded = Date.now();
    const done = await waitAllAnswered(() => host.port, conversations, accepted, 120_000);
    const recoveryMs = done ? Date.now() - faultEnded : null;
    const counts = await count(host.port, conversations, accepted);
    const failedCalls = fake.requests.filter(failedToolCall).length;
    if (process.env.FAULT_DEBUG) {
      for (const r of fake.requests)
        process.stderr.write(`REQ ${r.path} last=${JSON.stringify(r.body.messages?.at(-1)).slice(0, 300)} reply=${JSON.stringify(r.reply).slice(0, 200)}\n`);
      for (const c of conversations) process.stderr.write(`REPLIES ${c}: ${JSON.stringify(await replies(host.port, c))}\n`);
      process.stderr.write(host.stderr());
    }
    return {
      scenario: `MCP server SIGKILLs (${kills}, ${failedCalls} tool calls failed)`,
      sent: accepted.length,
      ...counts,
      maxHostCpu: cpu.max(),
      recoveryMs,
    };
  } finally {
    cpu.stop();
    await stop(host);
    killRunnersOf(home);
    await fake.close();
    if (!process.env.FAULT_DEBUG) fs.rmSync(home, { recursive: true, force: true });
    fs.rmSync(configDir, { recursive: true, force: true });
  }
}

/**
 * The model: for prompts not answered yet, call `send_message` (its text without the markers' brackets) when the tool
 * is offered, then answer naming them. Claude Code gives a message pushed during a turn as text next to a tool result,
 * so the markers still open are those in user text that no earlier answer named.
 */
function step(request: FakeRequest): FakeReply {
  const messages = request.body.messages ?? [];
  const open = openMarkers(messages);
  if (open.length === 0) return { text: 'ok' };
  const last = messages.at(-1);
  const afterTool = Array.isArray(last?.content) && last.content.some((block) => block.type === 'tool_result');
  if (afterTool || !request.toolNames.includes(SEND_MESSAGE)) return { text: `done ${open.join(' ')}` };
  return { toolUse: { name: SEND_MESSAGE, input: { text: `working on ${open.map((m) => m.slice(1, -1)).join(' ')}` } } };
}

const SEND_MESSAGE = 'mcp__pincer__send_message';

function openMarkers(messages: FakeMessage[]): string[] {
  const said = (role: string) =>
    messages
      .filter((m) => m.role === role)
      .flatMap((m) => (typeof m.content === 'string' ? [m.content] : m.content.filter((b) => b.type === 'text').map((b) => b.text ?? '')))
      .flatMap((text) => text.match(/\[mcp-\d{4}\]/g) ?? []);
  const answered = new Set(said('assistant'));
  return [...new Set(said('user'))].filter((marker) => !answered.has(marker));
}

function failedToolCall(request: FakeRequest): boolean {
  const last = request.body.messages?.at(-1);
  return Array.isArray(last?.content) && last.content.some((block) => block.type === 'tool_result' && (block as { is_error?: boolean }).is_error === true);
}

/** SIGKILL every live `pincer mcp` of a session under `home`; returns how many. */
function killMcpServers(home: string): number {
  let killed = 0;
  for (const pid of mcpServers(home)) {
    try {
      process.kill(pid, 'SIGKILL');
      killed++;
    } catch {
      // exited meanwhile
    }
  }
  return killed;
}

/** The live `pincer mcp` processes of the sessions under `home` (from /proc: their command line and environment). */
function mcpServers(home: string): number[] {
  const pids: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').at(-2) !== 'mcp') continue;
      if (fs.readFileSync(`/proc/${entry}/environ`, 'utf8').includes(`PINCER_WORKSPACE=${home}`)) pids.push(Number(entry));
    } catch {
      // gone, or not ours to read
    }
  }
  return pids;
}
