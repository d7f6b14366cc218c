#!/usr/bin/env node
// The README's picture of `pincer chat`'s terminal UI, captured from tmux: the chat runs on the built-in runtime
// against a scripted OpenAI-compatible model server on 127.0.0.1 (a tool call, then a markdown answer), in a
// 100×24 terminal with a fresh home; the screen, with its colours (capture-pane -e), is drawn as HTML in Chromium
// and saved as docs/screenshots/chat-tui.png. No test runs it (it writes a tracked file).
// Run after `npm run build`: node scripts/tui-screenshot.mjs   (PINCER_CHROMIUM: the browser, default /usr/bin/chromium)
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { ansiToHtml } from './ansi-html.mjs';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const replies = [
  { call: 'bash', args: { command: 'ls' } },
  {
    text: '## Your notes\n\nThe folder holds **two** files:\n\n- `todo.md` — three open tasks\n- `ideas.md` — a list of ideas\n\nShall I summarise `todo.md`?',
  },
];
const chunk = (choice, extra = {}) =>
  `data: ${JSON.stringify({ id: 'demo', object: 'chat.completion.chunk', created: 0, model: 'demo', choices: [{ index: 0, ...choice }], ...extra })}\n\n`;
const server = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    // the chat's start-up probe of the server (GET /v1/models) takes no reply of the script
    if (req.method !== 'POST')
      return void res.writeHead(200, { 'content-type': 'application/json' }).end('{"object":"list","data":[{"id":"qwen3:8b","object":"model"}]}');
    const reply = replies.shift() ?? { text: 'Done.' };
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(chunk({ delta: { role: 'assistant', content: '' }, finish_reason: null }));
    if (reply.text) res.write(chunk({ delta: { content: reply.text }, finish_reason: null }));
    else
      res.write(
        chunk({
          delta: { tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: reply.call, arguments: JSON.stringify(reply.args) } }] },
          finish_reason: null,
        }),
      );
    res.write(
      chunk({ delta: {}, finish_reason: reply.text ? 'stop' : 'tool_calls' }, { usage: { prompt_tokens: 900, completion_tokens: 60, total_tokens: 960 } }),
    );
    res.end('data: [DONE]\n\n');
  });
});
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const url = `http://127.0.0.1:${server.address().port}/v1`;

const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-tui-shot-'));
const sock = `pincer-shot-${process.pid}`;
const tmux = (...args) => spawnSync('tmux', ['-L', sock, '-f', '/dev/null', ...args], { encoding: 'utf8' });
const env = {
  PINCER_HOME: home,
  AGENT_PROVIDER: 'pincer',
  PINCER_MODEL: 'local/qwen3:8b',
  OPENAI_BASE_URL: url,
  PINCER_RUNNER: 'process',
  TERM: 'xterm-256color',
};
const vars = Object.entries(env)
  .map(([k, v]) => `${k}='${v}'`)
  .join(' ');
tmux('new-session', '-d', '-x', '100', '-y', '24', `env ${vars} node ${path.join(root, 'bin/pincer.js')} chat`);
const screen = () => tmux('capture-pane', '-p').stdout.replace(/\s+$/, '');
async function until(what, test) {
  for (let i = 0; i < 600; i++) {
    if (test(screen())) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`tui-screenshot: no ${what} within 60 s:\n${screen()}`);
}
try {
  await until('status line', (s) => /^provider /m.test(s));
  // the agent's folder holds the files the answer names (its bash lists them)
  const agent = path.join(home, 'sessions', 'chat', 'agent');
  fs.mkdirSync(agent, { recursive: true });
  for (const file of ['todo.md', 'ideas.md']) fs.writeFileSync(path.join(agent, file), '');
  tmux('send-keys', '-l', 'what is in my notes folder?');
  tmux('send-keys', 'Enter');
  await until('answer', (s) => s.includes('Shall I summarise'));
  // the home's temporary path is not worth showing
  const shot = tmux('capture-pane', '-p', '-e').stdout.replace(/\s+$/, '').replaceAll(home, '~/.pincer');
  const out = path.join(root, 'docs', 'screenshots', 'chat-tui.png');
  await render(shot, out);
  console.log(`${path.relative(root, out)}:\n${screen().replaceAll(home, '~/.pincer')}`);
} finally {
  tmux('kill-server');
  server.close();
  if (!process.env.KEEP) fs.rmSync(home, { recursive: true, force: true });
}

/** The captured screen as a terminal-looking page, screenshot at its own size. */
async function render(ansi, file) {
  const browser = await chromium.launch({
    executablePath: process.env.PINCER_CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update'],
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1000, height: 400 }, deviceScaleFactor: 1 });
    await page.setContent(
      `<!doctype html><meta charset="utf-8"><style>
        body { margin: 0; background: #1e1e1e; }
        pre { margin: 0; padding: 14px 16px; display: inline-block; min-width: 100ch; color: #d4d4d4; background: #1e1e1e;
              font: 14px/1.35 'DejaVu Sans Mono', 'Liberation Mono', monospace; }
      </style><pre>${ansiToHtml(ansi)}</pre>`,
    );
    await page.locator('pre').screenshot({ path: file });
  } finally {
    await browser.close();
  }
}
