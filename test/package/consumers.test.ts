/**
 * The packed package, as users get it: `npm pack` of the built dist/ (run `npm run build` first; `npm
 * test` does), installed offline from the tarball into consumer projects, each compiled by
 * TypeScript under one module setting and then run by Node:
 *
 * - CommonJS with `moduleResolution: node10` (the NestJS default),
 * - `node16` from CommonJS, `nodenext` from ESM, and `bundler`,
 * - plain `require` and `import` of every subpath the manifest exports,
 * - an app that mixes both: one key-space registry and one family of error classes across copies.
 *
 * The consumers live under the repository's ignored .tmp/, so a peer the adapters load (Express,
 * NestJS, node-redis types) and TypeScript itself come from the repository's node_modules above.
 */
import { strict as assert } from 'node:assert';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  version: string;
  exports: Record<string, unknown>;
};
const dir = join(root, '.tmp', `consumers-${process.pid}`);
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
/** Generous: npm and tsc on a loaded 2-core machine. */
const SLOW = { timeout: 300_000 };

function run(cmd: string, args: string[], cwd: string): string {
  try {
    return execFileSync(cmd, args, {
      cwd,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 240_000,
    });
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string; message: string };
    throw new Error(
      `${cmd} ${args.join(' ')} (in ${cwd}) failed:\n${e.stdout ?? ''}\n${e.stderr ?? e.message}`,
    );
  }
}

/** What every typed consumer imports and uses: the core, a store, two adapters and the Redis store. */
const typedSource = `import { createReceiver, hmac, memoryStore, OnceonlyError, type Outcome } from 'onceonly';
import { memoryStore as memoryFromSubpath } from 'onceonly/memory';
import { webhook as expressWebhook } from 'onceonly/express';
import { OnceonlyModule, webhook as nestWebhook } from 'onceonly/nestjs';
import { redisStore } from 'onceonly/redis';
import { stripe } from 'onceonly/providers';

const receiver = createReceiver({
  provider: hmac({ name: 'consumer', secret: 'whsec_consumer', signatureHeader: 'x-signature', id: (e: any) => String(e.id) }),
  store: memoryFromSubpath(),
  handler: async () => {},
});
const outcome: Outcome = 'processed';
const checks: [string, boolean][] = [
  ['receiver', typeof receiver.fetch === 'function'],
  ['memoryStore', typeof memoryStore === 'function'],
  ['express', typeof expressWebhook === 'function'],
  ['nestjs', typeof nestWebhook === 'function' && typeof OnceonlyModule === 'function'],
  ['redis', typeof redisStore === 'function'],
  ['stripe', typeof stripe === 'function'],
  ['error', new OnceonlyError('x', 'y') instanceof Error],
  ['outcome', outcome === 'processed'],
];
const failed = checks.filter(([, ok]) => !ok).map(([name]) => name);
console.log(failed.length === 0 ? 'consumer ok' : 'consumer failed: ' + failed.join(', '));
`;

interface Consumer {
  name: string;
  type: 'commonjs' | 'module';
  compilerOptions: Record<string, unknown>;
}
const consumers: Consumer[] = [
  {
    name: 'commonjs-node10',
    type: 'commonjs',
    compilerOptions: { module: 'commonjs', moduleResolution: 'node10', esModuleInterop: true },
  },
  { name: 'node16-cjs', type: 'commonjs', compilerOptions: { module: 'node16', moduleResolution: 'node16' } },
  {
    name: 'nodenext-esm',
    type: 'module',
    compilerOptions: { module: 'nodenext', moduleResolution: 'nodenext' },
  },
  { name: 'bundler', type: 'module', compilerOptions: { module: 'esnext', moduleResolution: 'bundler' } },
];

before(() => {
  assert.ok(
    existsSync(join(root, 'dist', 'index.js')) && existsSync(join(root, 'dist', 'cjs', 'index.js')),
    'onceonly: dist/ is not built: run `npm run build` first (`npm test` does)',
  );
  mkdirSync(dir, { recursive: true });
  // The tarball as published, from the dist/ already built (no second build under running tests).
  const packed = JSON.parse(
    run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', dir], root),
  ) as { filename: string }[];
  const tarball = join(dir, packed[0]!.filename);
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'consumers', private: true }));
  run(
    'npm',
    ['install', '--offline', '--no-audit', '--no-fund', '--ignore-scripts', '--no-package-lock', tarball],
    dir,
  );
});
after(() => rmSync(dir, { recursive: true, force: true }));

describe('the packed tarball in consumer projects', () => {
  for (const consumer of consumers) {
    it(`compiles and runs a ${consumer.name} TypeScript consumer`, SLOW, () => {
      const at = join(dir, consumer.name);
      mkdirSync(at, { recursive: true });
      writeFileSync(join(at, 'package.json'), JSON.stringify({ name: consumer.name, type: consumer.type }));
      writeFileSync(
        join(at, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: {
            target: 'ES2022',
            strict: true,
            skipLibCheck: true,
            types: ['node'],
            outDir: 'out',
            ...consumer.compilerOptions,
          },
          files: ['index.ts'],
        }),
      );
      writeFileSync(join(at, 'index.ts'), typedSource);
      run(process.execPath, [tsc, '-p', '.'], at);
      const compiled = readFileSync(join(at, 'out', 'index.js'), 'utf8');
      // The module format the setting asks for is the one that runs.
      if (consumer.type === 'commonjs') assert.match(compiled, /require\("onceonly\/nestjs"\)/);
      else assert.match(compiled, /from 'onceonly\/nestjs'/);
      assert.equal(run(process.execPath, ['out/index.js'], at).trim(), 'consumer ok');
    });
  }

  it('require() and import() of every exported subpath load, on the Node that runs the tests', SLOW, () => {
    const subpaths = Object.keys(manifest.exports)
      .filter((s) => s !== './package.json')
      .map((s) => (s === '.' ? 'onceonly' : `onceonly/${s.slice(2)}`));
    const script = `const subpaths = ${JSON.stringify(subpaths)};
const counts = [];
for (const s of subpaths) {
  const cjs = require(s);
  counts.push(s + ' ' + Object.keys(cjs).length);
}
(async () => {
  for (const s of subpaths) {
    const esm = await import(s);
    const cjs = require(s);
    const a = Object.keys(esm).filter((k) => k !== 'default' && k !== 'module.exports').sort().join();
    const b = Object.keys(cjs).sort().join();
    if (a !== b) throw new Error(s + ': ESM exports ' + a + ' but CommonJS ' + b);
  }
  console.log(counts.join('\\n'));
})();
`;
    writeFileSync(join(dir, 'every-subpath.cjs'), script);
    const out = run(process.execPath, ['every-subpath.cjs'], dir);
    for (const s of subpaths) assert.match(out, new RegExp(`^${s} [1-9]\\d*$`, 'm'), `${s} exports nothing`);
  });

  it(
    'an app that both imports and requires the package shares one registry and one error family',
    SLOW,
    () => {
      const script = `import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
const esm = await import('onceonly');
const cjs = require('onceonly');
const cjsMemory = require('onceonly/memory');
if (esm.createReceiver === cjs.createReceiver) throw new Error('expected two copies of the package');
const store = cjsMemory.memoryStore();
const provider = () => esm.hmac({ name: 'mixed', secret: 'whsec_mixed', signatureHeader: 'x-signature', id: (e) => String(e.id) });
esm.createReceiver({ provider: provider(), store, handler: async () => {} });
let refused;
try {
  cjs.createReceiver({ provider: cjs.hmac({ name: 'mixed', secret: 'whsec_mixed', signatureHeader: 'x-signature', id: (e) => String(e.id) }), store, handler: async () => {} });
} catch (error) {
  refused = error;
}
const lines = [
  'refused ' + (refused?.code ?? 'no'),
  'cjs error instanceof esm class ' + (new cjs.StoreTimeoutError('claim', 5) instanceof esm.StoreUnavailableError),
  'esm error instanceof cjs class ' + (new esm.HandlerTimeoutError(5) instanceof cjs.OnceonlyError),
  'unrelated class ' + (new esm.HandlerTimeoutError(5) instanceof cjs.StoreTimeoutError),
  'plain error ' + (new Error('x') instanceof esm.OnceonlyError),
];
console.log(lines.join('\\n'));
`;
      writeFileSync(join(dir, 'mixed.mjs'), script);
      const out = run(process.execPath, ['mixed.mjs'], dir);
      assert.deepEqual(out.trim().split('\n'), [
        'refused key_space_taken',
        'cjs error instanceof esm class true',
        'esm error instanceof cjs class true',
        'unrelated class false',
        'plain error false',
      ]);
    },
  );

  it('the tarball holds dist/, the README and the LICENSE, and no sources, tests or maps', SLOW, () => {
    const files = JSON.parse(
      run('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], root),
    )[0].files.map((f: { path: string }) => f.path) as string[];
    assert.ok(files.includes('LICENSE') && files.includes('README.md') && files.includes('package.json'));
    assert.ok(files.includes('dist/cjs/package.json'), 'dist/cjs is marked CommonJS');
    const stray = files.filter(
      (f) =>
        !/^dist\/.+\.(js|d\.ts)$/.test(f) &&
        !['LICENSE', 'README.md', 'package.json', 'dist/cjs/package.json'].includes(f),
    );
    assert.deepEqual(stray, []);
    const installed = JSON.parse(readFileSync(join(dir, 'node_modules', 'onceonly', 'package.json'), 'utf8'));
    assert.equal(installed.version, manifest.version);
    assert.equal(installed.scripts?.prepare, undefined, 'no prepare script in the published manifest');
  });
});
