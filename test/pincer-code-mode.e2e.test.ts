import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { closeFakeOpenAIs, startFakeOpenAI } from './support/fake-openai.js';
import { startHost, stopAllHosts } from './support/host-harness.js';
import { waitFor } from './support/wait.js';

/**
 * Code mode through a real host: a group with `"codeMode": true` gives the model only `exec` and `wait`; its programs
 * run in the QuickJS sandbox on the runner's code pool and call the run's other tools — the file tools (planned on
 * the file pool) and Pincer's MCP server — through the normal tool path. One worker only (PINCER_WORKER_PARALLELISM=1):
 * a program whose calls need the file pool must not deadlock. A program that loops, one that allocates without end
 * and one that looks for host objects fail as tool errors and the runner goes on; a slow one answers with a handle
 * that `wait` resumes.
 */
afterEach(async () => {
  await closeFakeOpenAIs();
  const left = await stopAllHosts();
  expect(left).toEqual({ hosts: 0, runners: 0 });
});

const PARALLEL = `
const [written, edited, sent] = await Promise.all([
  tools.write({ path: 'made.txt', content: 'made by a program\\n' }),
  tools.edit({ path: 'notes.md', oldText: 'draft', newText: 'final' }),
  tools.mcp__pincer__send_message({ text: 'hello from the program' }),
]);
console.log(written);
return { edited: edited.split('\\n')[0], sent };`;

describe('built-in runtime: code mode', { timeout: 180_000 }, () => {
  it('exec runs programs that call file tools and an MCP tool in parallel; limits and host objects fail cleanly; wait resumes', async () => {
    const fake = await startFakeOpenAI();
    fake.script(
      { text: 'ready' },
      { call: 'exec', args: { code: PARALLEL } },
      { call: 'exec', args: { code: 'while (true) {}' } },
      { call: 'exec', args: { code: 'const a = []; for (;;) a.push(new ArrayBuffer(1 << 20));' } },
      { call: 'exec', args: { code: 'return [typeof require, typeof process, typeof fetch, typeof tools.bash]', language: 'typescript' } },
      { call: 'exec', args: { code: 'const out = await tools.bash({ command: "sleep 14; echo slept" }); return out.split("\\n")[0]' } },
      { call: 'wait', args: { handle: 'p5', seconds: 60 } },
      { text: 'programs ran' },
    );
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-code-home-'));
    const host = await startHost(
      {
        AGENT_PROVIDER: 'pincer',
        PINCER_MODEL: 'local/qwen3:8b',
        OPENAI_BASE_URL: fake.baseUrl,
        PINCER_MODEL_MAX_RETRIES: '0',
        PINCER_WORKER_PARALLELISM: '1',
        PINCER_CODE_SLICE_MS: '8000',
        PINCER_CODE_MEMORY_MB: '16',
        PINCER_CODE_WAIT_MS: '12000',
      },
      home,
    );
    const groups = path.join(home, 'groups');
    const group = await waitFor('the default group folder', () => (fs.existsSync(groups) ? fs.readdirSync(groups)[0] : undefined));
    // the group's package turns code mode on; the notes are in the session's own agent/, made by its first message
    fs.writeFileSync(path.join(groups, group, 'package.json'), JSON.stringify({ name: 'coder', pincer: { runtime: { codeMode: true } } }));
    const stream = host.stream('code');
    const sent = (await host.request('POST', '/v1/conversations/code/messages', { text: 'hello' })).body as { sessionId: string };
    await stream.waitFor('the first answer', (e) => e.event === 'chat' && e.data.text === 'ready', 60_000);
    const agentDir = path.join(host.sessionDir(sent.sessionId), 'agent');
    fs.writeFileSync(path.join(agentDir, 'notes.md'), 'a draft\n');
    await host.request('POST', '/v1/conversations/code/messages', { text: 'run some programs' });
    await stream.waitFor('the answer', (e) => e.event === 'chat' && e.data.text === 'programs ran', 150_000);

    // The model saw exactly exec and wait.
    const requests = fake.modelRequests().slice(1);
    const toolNames = (requests[0]!.body.tools as { function?: { name: string }; name?: string }[]).map((t) => t.function?.name ?? t.name);
    expect(toolNames.sort()).toEqual(['exec', 'wait']);

    // 1: the three calls ran through the real tools, the MCP one reached the chat.
    expect(fs.readFileSync(path.join(agentDir, 'made.txt'), 'utf8')).toBe('made by a program\n');
    expect(fs.readFileSync(path.join(agentDir, 'notes.md'), 'utf8')).toBe('a final\n');
    const chats = stream.events.filter((e) => e.event === 'chat').map((e) => e.data.text);
    expect(chats).toContain('hello from the program');
    const toolAnswer = (i: number): string => {
      const body = JSON.stringify(requests[i]!.body);
      const messages = requests[i]!.body.messages as { role: string; content: unknown }[];
      const last = messages.filter((m) => m.role === 'tool').at(-1);
      expect(last, body).toBeDefined();
      return typeof last!.content === 'string' ? last!.content : JSON.stringify(last!.content);
    };
    expect(toolAnswer(1)).toMatch(
      /^\{"edited":"edited notes.md at line 1","sent":"Sent as message \d+\."\}\n--- console ---\nwrote 18 bytes to made.txt \(new file\)$/,
    );
    // 2–4: the limits and the sandbox, as tool errors the model reads.
    expect(toolAnswer(2)).toContain('the program ran longer than its limit of 8000 ms of computing and was stopped');
    expect(toolAnswer(3)).toContain('the program used more than its memory limit of 16 MB and was stopped');
    expect(toolAnswer(4)).toBe('["undefined","undefined","undefined","function"]');
    // 5–6: a handle, then wait's result.
    expect(toolAnswer(5)).toMatch(/^the program is still running after \d+ s \(1 tool calls so far, waiting on bash\); call wait with \{"handle": "p5"\}/);
    expect(toolAnswer(6)).toBe('slept');

    const runnerLog = fs.readFileSync(path.join(home, 'logs', `${sent.sessionId}.log`), 'utf8');
    expect(runnerLog).toMatch(/exec p1: tool edit in \d+ ms/);
    expect(runnerLog).toMatch(/exec p1: tool mcp__pincer__send_message in \d+ ms/);
    // The runner lived through it all: the next message is answered by the same runner.
    fake.script({ text: 'still here' });
    await host.request('POST', '/v1/conversations/code/messages', { text: 'are you there?' });
    await stream.waitFor('the second answer', (e) => e.event === 'chat' && e.data.text === 'still here', 60_000);
    expect(host.runnerPids()).toHaveLength(1);
    stream.close();
    expect(await host.stop()).toBe(0);
    fs.rmSync(home, { recursive: true, force: true });
  });
});
