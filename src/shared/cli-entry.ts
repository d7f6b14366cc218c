import { fileURLToPath } from 'node:url';

/**
 * The compiled `pincer` CLI entry. Runners are `node <cli> runner` and the MCP server `node <cli> mcp`, so every
 * piece that starts one of them (launchers, the MCP config handed to providers) takes the path from here.
 */
export const CLI_ENTRY = fileURLToPath(new URL('../cli/main.js', import.meta.url));
