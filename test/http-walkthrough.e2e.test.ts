import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BUILT_CLI } from './support/runner-harness.js';

/**
 * docs/http-api.md's walkthrough runs as written: its first shell block, with `node bin/pincer.js` as the built CLI and port
 * 0 instead of 8080, under `bash -e -o pipefail` in a temp folder; a trap stops its host however the script ends.
 */
const DOC = path.resolve(import.meta.dirname, '..', 'docs', 'http-api.md');

function walkthrough(): string {
  const text = fs.readFileSync(DOC, 'utf8');
  const section = text.slice(text.indexOf('## Walkthrough'));
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1];
  if (!block) throw new Error('no shell block under "## Walkthrough" in docs/http-api.md');
  return block;
}

function run(script: string, cwd: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn('bash', ['-e', '-o', 'pipefail', '-c', script], { cwd, env: { PATH: process.env.PATH, HOME: process.env.HOME, TZ: 'UTC' } });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    const timer = setTimeout(() => child.kill('SIGTERM'), 60_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe('docs/http-api.md walkthrough', () => {
  it('runs top to bottom against a real host and shows what the text says', async () => {
    const block = walkthrough();
    expect(block).toContain('node bin/pincer.js host --http 8080');
    const cli = `node ${JSON.stringify(BUILT_CLI)}`;
    const script = `trap 'kill $STREAM 2>/dev/null || true; ${cli} host stop >/dev/null 2>&1 || true' EXIT\ntrap 'exit 143' TERM\n${block
      .replaceAll('node bin/pincer.js', cli)
      .replace('--http 8080', '--http 0')}`;
    const cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-walkthrough-'));
    const { code, stdout, stderr } = await run(script, cwd);
    expect(code, `${stdout}\n${stderr}\n${fs.readFileSync(path.join(cwd, 'host.log'), 'utf8')}`).toBe(0);

    const lines = stdout.split('\n');
    // two receipts, then the two answers from the stream, the second with the saved file
    expect(lines.filter((l) => /^\{"sessionId":"s-[^"]+","id":"[^"]+","seq":\d+\}$/.test(l)).length).toBeGreaterThanOrEqual(3);
    const answers = lines.filter((l) => l.startsWith('data: ') && l.includes('"type":"chat"'));
    expect(answers).toHaveLength(2);
    expect(answers[0]).toContain('echo: ');
    expect(answers[0]).toContain('hello');
    expect(answers[1]).toMatch(/read this.*\[file available at: [^\]]*note\.txt\]/);
    // the task through its changes
    expect(stdout).toMatch(/^\{"tasks":\[\{"id":"[^"]+",.*"status":"pending","prompt":"Review open PRs".*"recurrence":"0 9 \* \* 1-5"/m);
    expect(stdout).toMatch(/^\{"id":"[^"]+",.*"status":"paused"/m);
    expect(stdout).toMatch(/^\{"id":"[^"]+",.*"recurrence":"30 8 \* \* 1-5"/m);
    expect(stdout).toMatch(/^\{"id":"[^"]+","status":"cancelled"\}$/m);
    // the limited token, the signed webhook, the failed download
    expect(lines).toContain('ann: 200');
    expect(lines).toContain('bob: 403');
    expect(stdout).toMatch(/"error":"webhook \\"github\\": X-Hub-Signature-256 does not match the body.*nothing was stored","code":"unauthorized"\} 401$/m);
    expect(lines).toContain('no such file (curl exit 22)');
    expect(fs.existsSync(path.join(cwd, 'report.pdf'))).toBe(false);
    expect(stderr).toContain('token "ann-bridge" created for conversations ann');
    // `pincer host stop` stopped the host cleanly, and the walkthrough left nothing but its log in the folder
    expect(fs.readFileSync(path.join(cwd, 'host.log'), 'utf8')).toMatch(/stopped\s*$/);
    expect(stdout).toMatch(/^stopped the host \(pid \d+\) on /m);
    expect(fs.readdirSync(cwd)).toEqual(['host.log']);
  }, 120_000);
});
