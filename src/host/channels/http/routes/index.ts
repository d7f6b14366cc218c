import type { HttpRouteModule } from '../types.js';
import { conversationRoutes } from './conversations.js';
import { fileRoutes } from './files.js';
import { loginRoutes } from './login.js';
import { modelRoutes } from './models.js';
import { sessionRoutes } from './sessions.js';
import { taskRoutes } from './tasks.js';
import { webhookRoutes } from './webhooks.js';
import { runnerRoutes } from './runners.js';
import { webRoutes } from './web.js';

/**
 * The built-in areas of the HTTP API, one module each. A new area is a file here exporting an `HttpRouteModule`
 * and one line below; an area that needs something the channel does not have (a ledger, a Chat SDK instance) is
 * passed in `HttpChannelOptions.routes` by whoever builds the channel instead.
 */
export const BUILTIN_ROUTES: HttpRouteModule[] = [
  sessionRoutes,
  loginRoutes,
  conversationRoutes,
  taskRoutes,
  webhookRoutes,
  fileRoutes,
  runnerRoutes,
  modelRoutes,
  webRoutes,
];
