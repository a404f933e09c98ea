/**
 * scripts/valkey.sh refuses a server that would load a library from the host, and never reuses one:
 * neither one its own failed run left (the wrapper is written only after the check) nor one an
 * earlier version of the script left (the reuse short cut runs the same check).
 *
 * No network: a fake apt-get on PATH hands the script one .deb built from the unpacked Valkey in
 * .tmp/valkey/root (fetched first, as the Valkey suite does), with zlib removed (so libcrypto's
 * libz.so.1 comes from the host, as an earlier version of the script left it).
 */
import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { reachable } from '../support/servers.js';
import { valkeyServer } from '../support/valkey.js';

const repo = fileURLToPath(new URL('../..', import.meta.url));
const script = join(repo, 'scripts/valkey.sh');
const unpacked = join(repo, '.tmp/valkey/root');
const libdir = 'usr/lib/x86_64-linux-gnu';

const tmp = mkdtempSync(join(tmpdir(), 'onceonly-valkey-sh-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

/** A .deb holding the unpacked root, minus the files `drop` names (in usr/lib/<arch>). */
function deb(name: string, drop: RegExp): string {
  const stage = join(tmp, `stage-${name}`);
  cpSync(unpacked, stage, { recursive: true, verbatimSymlinks: true });
  for (const f of readdirSync(join(stage, libdir))) if (drop.test(f)) rmSync(join(stage, libdir, f));
  const control = join(stage, 'DEBIAN');
  mkdirSync(control);
  writeFileSync(
    join(control, 'control'),
    `Package: fake-valkey-${name}\nVersion: 1\nArchitecture: amd64\nMaintainer: onceonly tests <tests@localhost>\nDescription: test\n`,
  );
  const out = join(tmp, `${name}.deb`);
  const built = spawnSync('dpkg-deb', ['-Znone', '--root-owner-group', '-b', stage, out], {
    encoding: 'utf8',
  });
  assert.equal(built.status, 0, built.stderr);
  rmSync(stage, { recursive: true, force: true });
  return out;
}

/** Runs scripts/valkey.sh with a fake apt-get that "downloads" `debFile`, into `dest`. */
function runScript(dest: string, debFile: string) {
  const bin = join(tmp, 'bin');
  mkdirSync(bin, { recursive: true });
  const fake = join(bin, 'apt-get');
  writeFileSync(
    fake,
    `#!/bin/sh\nfor a in "$@"; do case "$a" in update) exit 0;; download) cp "$FAKE_DEB" ./fake.deb; exit 0;; esac; done\nexit 0\n`,
  );
  chmodSync(fake, 0o755);
  return spawnSync('bash', [script], {
    encoding: 'utf8',
    env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, ONCEONLY_VALKEY_DIR: dest, FAKE_DEB: debFile },
  });
}

/** The libraries the installed server would load from outside its own root. */
function hostLibraries(dest: string): string[] {
  const root = join(dest, 'root');
  const listed = spawnSync(join(root, libdir, 'ld-linux-x86-64.so.2'), [
    '--library-path',
    join(root, libdir),
    '--list',
    join(root, 'usr/bin/valkey-server'),
  ]);
  return String(listed.stdout)
    .split('\n')
    .filter((l) => l.includes('=>') && !l.includes(`${root}/`));
}

const fetched = await valkeyServer().catch((err: unknown) =>
  err instanceof Error ? err : new Error(String(err)),
);
const usable = await reachable(
  'Valkey 8.1 and dpkg-deb (bash scripts/valkey.sh)',
  '.tmp/valkey/root',
  async () => {
    if (fetched instanceof Error) throw fetched;
    if (!existsSync(join(unpacked, 'usr/bin/valkey-server'))) throw new Error('no .tmp/valkey/root');
    if (spawnSync('dpkg-deb', ['--version']).status !== 0) throw new Error('no dpkg-deb');
    if (process.arch !== 'x64') throw new Error(`this test builds x86_64 packages, not ${process.arch}`);
  },
);

if (usable)
  describe('scripts/valkey.sh', () => {
    let withoutZlib: string;
    let complete: string;
    before(() => {
      withoutZlib = deb('nozlib', /^libz\.so/);
      complete = deb('complete', /^$/);
    });

    it('a run whose host-library check failed leaves nothing the next run accepts', () => {
      const dest = join(tmp, 'dest-failed');
      const first = runScript(dest, withoutZlib);
      assert.notEqual(first.status, 0, 'the check must fail: libz comes from the host');
      assert.match(first.stderr, /come from the host/);
      // The same machine, the same packages: the second run must fail the same way.
      const second = runScript(dest, withoutZlib);
      assert.notEqual(
        second.status,
        0,
        `the second run accepted the server the first run rejected (printed ${second.stdout.trim()}; it loads ${hostLibraries(dest).join('; ')})`,
      );
    });

    it('an install left by an earlier run (libraries from the host) is not kept as it is', () => {
      const dest = join(tmp, 'dest-stale');
      // What an earlier version of the script left: a working wrapper over a root without zlib.
      const first = runScript(dest, withoutZlib);
      assert.notEqual(first.status, 0);
      assert.ok(hostLibraries(dest).length > 0);
      // Now the packages are complete: the script should check (and redo) the install, not reuse it.
      const again = runScript(dest, complete);
      assert.equal(again.status, 0, again.stderr);
      assert.deepEqual(hostLibraries(dest), [], 'the server still loads libraries from the host');
    });
  });
