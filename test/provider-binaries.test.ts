import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { installedBinaryPackage, providerBinary } from '../src/runtime/provider-binaries.js';
import { pinnedSpec } from '../src/cli/provider.js';

/** Which platform package carries each SDK provider's binary, when it counts as installed, and its pinned version. */
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

function scratch(): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-binaries-'));
  dirs.push(root);
  return root;
}

function put(root: string, file: string, text = '{}'): void {
  fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
  fs.writeFileSync(path.join(root, file), text);
}

describe('provider binaries', () => {
  it.each([
    ['claude', 'darwin', 'arm64', '@anthropic-ai/claude-agent-sdk-darwin-arm64'],
    ['codex', 'linux', 'arm64', '@openai/codex-linux-arm64'],
    ['codex', 'win32', 'x64', '@openai/codex-win32-x64'],
    ['opencode', 'darwin', 'arm64', 'opencode-darwin-arm64'],
  ] as const)('%s on %s-%s: %s', (name, platform, arch, pkg) => {
    expect(providerBinary(name, platform, arch)?.candidates[0]).toBe(pkg);
  });

  it('the built-in runtime and the mock have none', () => {
    expect(providerBinary('pincer')).toBeUndefined();
    expect(providerBinary('mock')).toBeUndefined();
  });

  it('a platform package without its binary file is not installed; with it, it is', () => {
    const root = scratch();
    const binary = providerBinary('claude')!;
    const pkg = binary.candidates[0]!;
    put(root, `node_modules/${pkg}/package.json`);
    expect(installedBinaryPackage(binary, root)).toBeUndefined();
    put(root, `node_modules/${pkg}/${binary.file}`, '#!/bin/sh\n');
    expect(installedBinaryPackage(binary, root)).toBe(pkg);
  });

  it("the pinned version comes from the lockfile (aliases too), else from the SDK's optionalDependencies", () => {
    const root = scratch();
    put(
      root,
      'package-lock.json',
      JSON.stringify({ packages: { 'node_modules/@openai/codex-linux-x64': { name: '@openai/codex', version: '0.163.0-linux-x64' } } }),
    );
    expect(pinnedSpec('@openai/codex-linux-x64', '@openai/codex', root)).toBe('@openai/codex-linux-x64@npm:@openai/codex@0.163.0-linux-x64');
    put(root, 'node_modules/@anthropic-ai/claude-agent-sdk/package.json', JSON.stringify({ optionalDependencies: { 'x-linux-x64': '1.2.3' } }));
    expect(pinnedSpec('x-linux-x64', '@anthropic-ai/claude-agent-sdk', root)).toBe('x-linux-x64@1.2.3');
    expect(() => pinnedSpec('y', '@anthropic-ai/claude-agent-sdk', root)).toThrow(/no pinned version of y/);
  });
});
