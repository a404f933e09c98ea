import { strict as assert } from 'node:assert';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

describe('README', () => {
  it('runs the quick start as pasted (only the package import is pointed at the source)', () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const block = /<!-- quickstart[^>]*-->\s*```ts\n([\s\S]*?)```/.exec(readme)?.[1];
    assert.ok(block, 'README has a quickstart block');
    assert.ok(block.split('\n').length <= 20, 'the quick start stays short');
    const dir = join(root, '.tmp', `readme-${process.pid}`);
    mkdirSync(dir, { recursive: true });
    const file = join(dir, 'quickstart.ts');
    writeFileSync(file, block.replaceAll("from 'onceonly'", `from '${join(root, 'src/index.ts')}'`));
    try {
      const out = execFileSync(process.execPath, ['--import', 'tsx', file], { encoding: 'utf8' });
      assert.match(out, /charging once for evt_1 attempt 1/);
      assert.match(out, /200 processed\n200 duplicate/);
      assert.equal(out.match(/charging once/g)?.length, 1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('runs the CommonJS form of the quick start as pasted, against the built CommonJS package', () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const block = /<!-- quickstart-cjs[^>]*-->\s*```js\n([\s\S]*?)```/.exec(readme)?.[1];
    assert.ok(block, 'README has a CommonJS quickstart block');
    assert.match(block, /require\('onceonly'\)/);
    const cjs = join(root, 'dist', 'cjs', 'index.js');
    assert.ok(existsSync(cjs), 'onceonly: dist/ is not built: run `npm run build` first (`npm test` does)');
    const dir = join(root, '.tmp', `readme-cjs-${process.pid}`);
    mkdirSync(dir, { recursive: true });
    const file = join(dir, 'quickstart.cjs');
    writeFileSync(file, block.replaceAll("require('onceonly')", `require(${JSON.stringify(cjs)})`));
    try {
      const out = execFileSync(process.execPath, [file], { encoding: 'utf8' });
      assert.equal(out, 'charging once for evt_1 attempt 1\n200 processed\n200 duplicate\n');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the install line names @types/node, and the quick start says it is ES module code', () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const quickStart = readme.slice(readme.indexOf('## Quick start'));
    assert.match(quickStart, /npm i onceonly\nnpm i -D typescript @types\/node/);
    assert.match(quickStart, /"types": \["node"\]/);
    assert.match(quickStart, /This is ES module code/);
  });

  it('npm start is the demo (tested in test/cli/demo.test.ts)', () => {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
    assert.equal(pkg.scripts.start, 'node scripts/start.mjs');
    // It starts: the demo's own help, through start.mjs (its workspace and hook on Node.js 20).
    const help = execFileSync('npm', ['start', '--silent', '--', '--help'], { cwd: root, encoding: 'utf8' });
    assert.match(help, /^usage: onceonly demo/m);
    assert.match(readFileSync(join(root, 'README.md'), 'utf8'), /npm start/);
  });

  it('npm run example runs the quick start example and ends with no loss and no double', () => {
    const out = execFileSync(process.execPath, ['--import', 'tsx', join(root, 'examples/quickstart.ts')], {
      encoding: 'utf8',
    });
    assert.match(out, /events lost 0, effects applied twice 0/);
    assert.match(out, /evt_1 retried \(duplicate\)\s+200\s+duplicate/);
    assert.match(out, /forged \(wrong secret\)\s+401\s+rejected/);
  });
});
