import fs from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

/**
 * Debian's Chromium driven by playwright-core (never `playwright install`: it downloads). `.ci/run` installs the
 * `chromium` package; without it the browser tests skip with this reason. Flags: no sandbox (root), and no
 * background networking, which this machine's closed network refuses.
 */
export const CHROMIUM = process.env.PINCER_CHROMIUM ?? '/usr/bin/chromium';
export const NO_CHROMIUM = fs.existsSync(CHROMIUM) ? undefined : `no Chromium at ${CHROMIUM} (apt-get install chromium; .ci/run does)`;

const browsers = new Set<Browser>();

export async function launchBrowser(): Promise<Browser> {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  browsers.add(browser);
  browser.once('disconnected', () => browsers.delete(browser));
  return browser;
}

export async function closeBrowsers(): Promise<void> {
  await Promise.all([...browsers].map((b) => b.close()));
}
