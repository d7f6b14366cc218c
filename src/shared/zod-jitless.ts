import { z } from 'zod';

/**
 * Imported first by the processes started per session (`pincer runner`, `pincer mcp`), before any schema is built:
 * zod's object schemas otherwise compile a parser of their own (`new Function`) on their first parse, which pays
 * only for a schema parsed many times. These processes parse most of their schemas once, at start (config.json, the
 * settings), and the compiling was ≈ 4 ms of a runner's cold start (docs/performance.md, "Cold start").
 */
z.config({ jitless: true });
