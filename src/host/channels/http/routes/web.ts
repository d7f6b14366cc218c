import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { PACKAGE_ROOT } from '../../../../shared/package-root.js';
import type { HttpRouteModule } from '../types.js';

/**
 * The control page: `/` and its static ES modules under `/web/`, from the package's `web/` folder, plus Preact and
 * htm in one module from the `htm` package (no build step, nothing fetched from elsewhere). The page holds no
 * secret, so these routes are open; everything it shows comes from the authenticated API after a token login.
 *
 * Only the files present at start-up are served (a fixed map, no path from the request reaches the file system), with
 * a strict Content-Security-Policy: scripts, styles and connections from this origin only, no inline script, no
 * framing, no plugins.
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
};

const SECURITY_HEADERS = {
  'Content-Security-Policy': CONTENT_SECURITY_POLICY,
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
  'Cache-Control': 'no-cache',
};

/** URL path → file, fixed when the routes are made. */
function pageAssets(): Map<string, string> {
  const dir = path.join(PACKAGE_ROOT, 'web');
  const assets = new Map<string, string>();
  for (const name of fs.existsSync(dir) ? fs.readdirSync(dir) : []) {
    if (path.extname(name) in TYPES) assets.set(`/web/${name}`, path.join(dir, name));
  }
  if (assets.has('/web/index.html')) assets.set('/', assets.get('/web/index.html')!);
  // `htm` resolves to <package>/dist/htm.js; the standalone Preact + htm module sits beside dist/.
  const htm = path.dirname(path.dirname(createRequire(import.meta.url).resolve('htm')));
  assets.set('/web/vendor/preact-htm.js', path.join(htm, 'preact', 'standalone.module.js'));
  return assets;
}

export const webRoutes: HttpRouteModule = ({ open }) => {
  const assets = pageAssets();
  for (const [urlPath, file] of assets) {
    open.get(urlPath, (c) => {
      const body = fs.readFileSync(file);
      return c.body(body, 200, { ...SECURITY_HEADERS, 'Content-Type': TYPES[path.extname(file)] ?? 'application/octet-stream' });
    });
  }
};
