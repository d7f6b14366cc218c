/**
 * `pincer provider add`: the agent binary of an SDK provider, installed with the real npm into a Pincer install (here
 * a scratch folder standing for one installed with `npm ci --omit=optional`), at the version Pincer's lockfile pins.
 * Offline it says so in one line, exit 2; from npm's cache (filled by this clone's `npm ci`) it installs, and
 * `pincer provider list` then names it. The probe and doctor's wording for a missing binary are checked in-process.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { installedBinaryPackage, PACKAGE_ROOT, providerBinary } from '../src/runtime/provider-binaries.js';
import { BUILT_CLI } from './support/runner-harness.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

const lock = JSON.parse(fs.readFileSync(path.join(PACKAGE_ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, object> };

/** A Pincer install without the binaries: a package with the lockfile entries of `pkgs` alone. */
function install(pkgs: string[]): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-provider-add-'));
  dirs.push(root);
  fs.writeFileSync(path.join(root, 'package.json'), JSON.stringify({ name: 'pincer-install', version: '0.0.0', private: true }));
  const packages = Object.fromEntries(pkgs.map((pkg) => [`node_modules/${pkg}`, lock.packages[`node_modules/${pkg}`]]));
  fs.writeFileSync(path.join(root, 'package-lock.json'), JSON.stringify({ name: 'pincer-install', lockfileVersion: 3, requires: true, packages }));
  return root;
}

function pincer(args: string[], env: Record<string, string>) {
  return spawnSync(process.execPath, [BUILT_CLI, ...args], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    encoding: 'utf8',
    timeout: 300_000,
  });
}

describe('pincer provider add', { timeout: 320_000 }, () => {
  it('offline, says in one line that it needs the registry, exit 2, nothing installed', () => {
    const pkg = providerBinary('codex')!.candidates[0]!;
    const root = install([pkg]);
    const cache = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-npm-cache-'));
    dirs.push(cache);
    const result = pincer(['provider', 'add', 'codex', '--dir', root], {
      npm_config_registry: 'http://127.0.0.1:9/',
      npm_config_cache: cache,
      npm_config_fetch_retries: '0',
      npm_config_fetch_timeout: '5000',
    });
    expect(result.status).toBe(2);
    const version = (lock.packages[`node_modules/${pkg}`] as { version: string }).version;
    expect(result.stderr.split('\n')[0]).toBe(
      `pincer: installing the Codex CLI (${pkg}@npm:@openai/codex@${version}) into ${path.join(root, 'node_modules')} with npm…`,
    );
    expect(result.stderr.trim().split('\n').at(-1)).toMatch(
      /^pincer: could not install @openai\/codex-\S+ from the npm registry \(.+\); it needs the registry \(npm config get registry\) — check the network, or install it later with pincer provider add codex \(see pincer provider add --help\)$/,
    );
    expect(installedBinaryPackage(providerBinary('codex')!, root)).toBeUndefined();
  });

  it("installs OpenCode's binary from npm's cache at the pinned version, and list names it", () => {
    const binary = providerBinary('opencode')!;
    const root = install(binary.candidates);
    expect(pincer(['provider', 'list', '--dir', root], {}).stdout).toContain('opencode  not installed: pincer provider add opencode\n');
    const result = pincer(['provider', 'add', 'opencode', '--dir', root], { npm_config_offline: 'true' });
    expect(result.stderr).not.toMatch(/^pincer: could not/m);
    expect(result.status).toBe(0);
    const pkg = binary.candidates[0]!;
    const version = (lock.packages[`node_modules/${pkg}`] as { version: string }).version;
    expect(result.stdout).toMatch(new RegExp(`^opencode: installed ${pkg}@${version} in [\\d.]+ s; `, 'm'));
    expect(fs.statSync(path.join(root, 'node_modules', pkg, binary.file!)).size).toBeGreaterThan(1 << 20);
    expect(pincer(['provider', 'list', '--dir', root], {}).stdout).toContain(`opencode  installed (${pkg})\n`);
    expect(pincer(['provider', 'add', 'opencode', '--dir', root], {}).stdout).toBe(`opencode: already installed (${pkg})\n`);
  });
});
