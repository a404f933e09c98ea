/**
 * The published declarations as a user's compiler reads them: the packed tarball installed into
 * projects made by `tsc --init` of TypeScript 5 and of TypeScript 7 (this workspace's `typescript5`
 * and `typescript7`), with `skipLibCheck` turned off so every onceonly `.d.ts` a program reaches is
 * checked, strict as `--init` writes it (`exactOptionalPropertyTypes` included):
 *
 * - Node apps, ESM and CommonJS: `"types": ["node"]` (the README's install line names `@types/node`),
 *   every subpath the manifest exports;
 * - web-standard apps (Workers, Deno, Bun), ESM, CommonJS and `bundler`: `"types": []` as `--init`
 *   writes it, so no Node types at all, and only the web entry points: the core with
 *   `receiver.fetch`, the memory store, the providers, Hono and Next. That the same project does
 *   refuse a Node entry point (Express) proves it really has no Node types.
 *
 * The projects live under the repository's ignored .tmp/, so the peers' own types (Express, Koa,
 * ioredis, pg, ...) and `@types/node` come from the repository's node_modules above. attw cannot
 * run on TypeScript 7 (it drives TypeScript 5's JavaScript API, which TypeScript 7 does not have):
 * these projects check under both compilers what attw checks under one.
 */
import { strict as assert } from 'node:assert';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));
const here = fileURLToPath(new URL('.', import.meta.url));
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  exports: Record<string, unknown>;
};
const dir = join(root, '.tmp', `types-${process.pid}`);
const SLOW = { timeout: 300_000 };

const compilers = [
  { name: 'TypeScript 5', major: '5', tsc: join(here, 'node_modules', 'typescript5', 'bin', 'tsc') },
  { name: 'TypeScript 7', major: '7', tsc: join(here, 'node_modules', 'typescript7', 'bin', 'tsc') },
];

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

/** `tsc --noEmit -p .`: its exit status and what it printed. */
function compile(tsc: string, cwd: string): { status: number | null; out: string } {
  const r = spawnSync(process.execPath, [tsc, '--noEmit', '-p', '.'], {
    cwd,
    encoding: 'utf8',
    timeout: 240_000,
  });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

/** The web entry points, used as a Workers / Deno / Bun app and a Next or Hono route use them. */
const webUse = `
const receiver = o.createReceiver({
  provider: providers.stripe({ secret: 'whsec_types' }),
  store: o.memoryStore(),
  handler: async (ctx: o.HandlerContext<providers.StripeEvent>) => {
    const outcome: o.Outcome = 'processed';
    void [ctx.event.type, ctx.attempt, outcome];
  },
});
const fetchHandler = { fetch: (request: Request): Promise<Response> => receiver.fetch(request) };
const POST: (request: Request) => Promise<Response> = next.webhook(receiver);
const route = hono.webhook({
  provider: providers.github({ secret: 'github-secret' }),
  store: memory.memoryStore(),
  handler: async ({ event, type }) => void [event, type],
});
const own = o.hmac({ name: 'own', secret: 'own-secret', signatureHeader: 'x-signature', id: (e: { id: string }) => e.id });
`;
const webSpecifiers = ['onceonly', 'onceonly/memory', 'onceonly/providers', 'onceonly/hono', 'onceonly/next'];
const webNames = ['o', 'memory', 'providers', 'hono', 'next'];

/** Every exported subpath, imported whole, and the web use: a Node app reaches every declaration. */
const nodeSpecifiers = Object.keys(manifest.exports)
  .filter((s) => s !== './package.json')
  .map((s) => (s === '.' ? 'onceonly' : `onceonly/${s.slice(2)}`));
const nodeNames = nodeSpecifiers.map((s) => webNames[webSpecifiers.indexOf(s)] ?? s.replace(/\W/g, '_'));

/** A source file of the imports and the use, in the module syntax the project compiles it as. */
function source(specifiers: string[], names: string[], format: 'esm' | 'cjs'): string {
  const imports = specifiers.map((s, i) =>
    format === 'esm' ? `import * as ${names[i]} from '${s}';` : `import ${names[i]} = require('${s}');`,
  );
  const all = `[${names.join(', ')}].map((m) => Object.keys(m).length)`;
  const exported = `{ fetchHandler, POST, route, own, counts: ${all} }`;
  return `${imports.join('\n')}\n${webUse}\n${format === 'esm' ? `export default ${exported};` : `export = ${exported};`}\n`;
}

/** What a `tsc --init` of this compiler writes, with `skipLibCheck` off and the project's `types`. */
function initProject(
  tsc: string,
  at: string,
  options: { types: string[]; moduleResolution?: 'bundler' },
): void {
  run(process.execPath, [tsc, '--init'], at);
  const path = join(at, 'tsconfig.json');
  let config = readFileSync(path, 'utf8');
  const edit = (from: RegExp, to: string) => {
    assert.match(config, from, `tsc --init wrote ${from} (${path})`);
    config = config.replace(from, to);
  };
  edit(/"skipLibCheck": true/, '"skipLibCheck": false');
  edit(/^(\s*)"types": \[\]/m, `$1"types": ${JSON.stringify(options.types)}`);
  assert.match(config, /^\s*"strict": true/m, 'tsc --init turns strict on');
  if (options.moduleResolution === 'bundler') {
    edit(/"module": "nodenext"/, '"module": "preserve", "moduleResolution": "bundler"');
  }
  writeFileSync(path, config);
}

interface Project {
  name: string;
  type: 'module' | 'commonjs';
  format: 'esm' | 'cjs';
  types: string[];
  moduleResolution?: 'bundler';
  node: boolean;
}
const projects: Project[] = [
  { name: 'node-esm', type: 'module', format: 'esm', types: ['node'], node: true },
  { name: 'node-cjs', type: 'commonjs', format: 'cjs', types: ['node'], node: true },
  { name: 'web-esm', type: 'module', format: 'esm', types: [], node: false },
  { name: 'web-cjs', type: 'commonjs', format: 'cjs', types: [], node: false },
  { name: 'web-bundler', type: 'module', format: 'esm', types: [], moduleResolution: 'bundler', node: false },
];

function makeProject(compiler: (typeof compilers)[number], project: Project, file: string): string {
  const at = join(dir, `ts${compiler.major}-${project.name}`);
  rmSync(at, { recursive: true, force: true });
  mkdirSync(at, { recursive: true });
  writeFileSync(
    join(at, 'package.json'),
    JSON.stringify({ name: project.name, private: true, type: project.type }),
  );
  initProject(compiler.tsc, at, project);
  writeFileSync(join(at, 'index.ts'), file);
  return at;
}

before(() => {
  assert.ok(
    existsSync(join(root, 'dist', 'index.d.ts')) && existsSync(join(root, 'dist', 'cjs', 'index.d.ts')),
    'onceonly: dist/ is not built: run `npm run build` first (`npm test` does)',
  );
  for (const compiler of compilers) {
    assert.ok(existsSync(compiler.tsc), `${compiler.tsc} missing: npm install --prefix test/types`);
  }
  mkdirSync(dir, { recursive: true });
  const packed = JSON.parse(
    run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', dir], root),
  ) as {
    filename: string;
  }[];
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'types-consumers', private: true }));
  run(
    'npm',
    [
      'install',
      '--offline',
      '--no-audit',
      '--no-fund',
      '--ignore-scripts',
      '--no-package-lock',
      join(dir, packed[0]!.filename),
    ],
    dir,
  );
});
after(() => rmSync(dir, { recursive: true, force: true }));

for (const compiler of compilers) {
  describe(`the published types under ${compiler.name}, in a tsc --init project with skipLibCheck off`, () => {
    it(`is ${compiler.name}`, () => {
      assert.match(
        run(process.execPath, [compiler.tsc, '--version'], root),
        new RegExp(`Version ${compiler.major}\\.`),
      );
    });

    for (const project of projects) {
      const what = project.node
        ? `every subpath, with "types": ["node"]`
        : `the web entry points, with no Node types ("types": [])`;
      it(`${project.name}: ${what} compile`, SLOW, () => {
        const file = project.node
          ? source(nodeSpecifiers, nodeNames, project.format)
          : source(webSpecifiers, webNames, project.format);
        const at = makeProject(compiler, project, file);
        const { status, out } = compile(compiler.tsc, at);
        assert.equal(out.trim(), '', `${compiler.name} in ${project.name}:\n${out}`);
        assert.equal(status, 0);
      });
    }

    it(
      'the web project has no Node types indeed: a Node entry point (Express) is refused there',
      SLOW,
      () => {
        const at = makeProject(
          compiler,
          { name: 'web-refuses-node', type: 'module', format: 'esm', types: [], node: false },
          `${source(webSpecifiers, webNames, 'esm')}import { webhook } from 'onceonly/express';\nvoid webhook;\n`,
        );
        const { status, out } = compile(compiler.tsc, at);
        assert.notEqual(status, 0);
        assert.match(out, /node_modules\/onceonly\/dist\/adapters\/node-io\.d\.ts.*'node:http'/);
        // Only the Node entry point's own declarations fail: nothing the web entry points reach.
        const files = new Set(
          [...out.matchAll(/^\.\.\/node_modules\/onceonly\/(\S+\.d\.ts)\(/gm)].map((m) => m[1]),
        );
        assert.deepEqual([...files].sort(), ['dist/adapters/express.d.ts', 'dist/adapters/node-io.d.ts']);
        assert.doesNotMatch(out, /^index\.ts/m, 'the app itself is fine');
      },
    );
  });
}
