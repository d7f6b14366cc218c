import { fileURLToPath } from 'node:url';

/**
 * The compiled `pincer` CLI entry. Runners are `node <cli> runner` and the MCP server `node <cli> mcp`, so every
 * piece that starts one of them (launchers, the MCP config handed to providers) takes the path from here.
 */
export const CLI_ENTRY = fileURLToPath(new URL('../cli/main.js', import.meta.url));

/**
 * V8 flags for the processes Pincer starts per session — the runner, and `pincer mcp` for the SDK-driven providers —
 * which are idle most of the time:
 * - a 1 MiB young generation: the default 16 MiB semi-spaces only inflate their memory (bench: runner growth over
 *   9,000 messages +86 → +23 MiB, no measurable throughput loss; an idle `pincer mcp` 64 → 60 MiB RSS);
 * - WebAssembly compiled by the baseline compiler only: the one wasm module a runner runs is the HTTP parser of
 *   `fetch` (undici's llhttp; the built-in runtime's model calls), and optimising it in the background left 9–30 MiB
 *   of freed compiler memory in a malloc arena in about half the runs (idle built-in runtime session: 80 → 71.5 MiB
 *   RSS). A runner parses a few HTTP responses a minute; the slower parser does not show in its latency.
 */
export const SESSION_NODE_FLAGS = ['--max-semi-space-size=1', '--liftoff-only'];
