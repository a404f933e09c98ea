/**
 * The published declarations as a user's compiler reads them: the packed tarball installed into
 * projects made by `tsc --init` of TypeScript 5 and of TypeScript 7 (this workspace's `typescript5`
 * and `typescript7`), with `skipLibCheck` turned off so every onceonly `.d.ts` a program reaches is
 * checked, strict as `--init` writes it (`exactOptionalPropertyTypes` included):
 *
 * - Node apps, ESM and CommonJS (`index.ts` and `index.cts`): `"types": ["node"]` (the README's install line names `@types/node`),
 *   every subpath the manifest exports, and (ESM) the README's quick start as pasted;
 * - web-standard apps (Workers, Deno, Bun), ESM and CommonJS, and ESM under `bundler`: `"types": []` as `--init`
 *   writes it, so no Node types at all, and only the web entry points: the core with
 *   `receiver.fetch`, the memory store, the providers, Hono and Next. That the same project does
 *   refuse a Node entry point (Express) proves it really has no Node types.
 *
 * One test file per compiler (typescript5.test.ts, typescript7.test.ts), each with its own time.
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

interface Compiler {
  name: string;
  major: string;
  tsc: string;
}

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

/**
 * `tsc --noEmit --listFiles -p .`: its exit status, what it printed but the files it read (`out`:
 * the diagnostics), and those files (`listed`: absolute paths, a line each). One compile for both: a
 * second run with --listFilesOnly built the whole program again (a fifth of the suite's CPU).
 */
function compile(tsc: string, cwd: string): { status: number | null; out: string; listed: string } {
  const r = spawnSync(process.execPath, [tsc, '--noEmit', '--listFiles', '-p', '.'], {
    cwd,
    encoding: 'utf8',
    timeout: 240_000,
  });
  const lines = `${r.stdout}${r.stderr}`.split('\n');
  const isListed = (line: string) => /^\/\S+\.[cm]?tsx?$/.test(line);
  return {
    status: r.status,
    out: lines.filter((line) => !isListed(line)).join('\n'),
    listed: lines.filter(isListed).join('\n'),
  };
}

const readme = readFileSync(join(root, 'README.md'), 'utf8');
const quickStart = /<!-- quickstart:[^>]*-->\s*```ts\n([\s\S]*?)```/.exec(readme)?.[1] ?? '';

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
const handler = lambda.webhook(receiver);
const own = o.hmac({ name: 'own', secret: 'own-secret', signatureHeader: 'x-signature', id: (e: { id: string }) => e.id });
`;
const webSpecifiers = [
  'onceonly',
  'onceonly/memory',
  'onceonly/providers',
  'onceonly/hono',
  'onceonly/next',
  'onceonly/lambda',
];
const webNames = ['o', 'memory', 'providers', 'hono', 'next', 'lambda'];

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
  const exported = `{ fetchHandler, POST, route, own, handler, counts: ${all} }`;
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

/**
 * One program per setting, so the peers' declarations are checked once for both module formats:
 * `index.ts` is ESM (the package is `"type": "module"`), `index.cts` CommonJS, each resolving the
 * package's own declarations for its format (dist/ and dist/cjs/).
 */
interface Project {
  name: string;
  types: string[];
  moduleResolution?: 'bundler';
  node: boolean;
  /** Also a CommonJS file, `index.cts`. */
  cjs: boolean;
}
const projects: Project[] = [
  { name: 'node', types: ['node'], node: true, cjs: true },
  { name: 'web', types: [], node: false, cjs: true },
  { name: 'web-bundler', types: [], moduleResolution: 'bundler', node: false, cjs: false },
];

function makeProject(compiler: Compiler, project: Project, files: Record<string, string>): string {
  const at = join(dir, `ts${compiler.major}-${project.name}`);
  rmSync(at, { recursive: true, force: true });
  mkdirSync(at, { recursive: true });
  writeFileSync(
    join(at, 'package.json'),
    JSON.stringify({ name: project.name, private: true, type: 'module' }),
  );
  initProject(compiler.tsc, at, project);
  for (const [name, text] of Object.entries(files)) writeFileSync(join(at, name), text);
  return at;
}

/** The suite under TypeScript `major` (5 or 7): this workspace's `typescript<major>`. */
export function publishedTypes(major: '5' | '7'): void {
  const compiler: Compiler = {
    name: `TypeScript ${major}`,
    major,
    tsc: join(here, 'node_modules', `typescript${major}`, 'bin', 'tsc'),
  };
  before(() => {
    assert.ok(quickStart.includes("from 'onceonly'"), 'README has its quick start block');
    assert.ok(
      existsSync(join(root, 'dist', 'index.d.ts')) && existsSync(join(root, 'dist', 'cjs', 'index.d.ts')),
      'onceonly: dist/ is not built: run `npm run build` first (`npm test` does)',
    );
    assert.ok(existsSync(compiler.tsc), `${compiler.tsc} missing: npm install --prefix test/types`);
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

  describe(`the published types under ${compiler.name}, in a tsc --init project with skipLibCheck off`, () => {
    it(`is ${compiler.name}`, () => {
      assert.match(
        run(process.execPath, [compiler.tsc, '--version'], root),
        new RegExp(`Version ${compiler.major}\\.`),
      );
    });

    for (const project of projects) {
      const what = project.node
        ? `every subpath and the README's quick start, with "types": ["node"]`
        : `the web entry points, with no Node types ("types": [])`;
      const formats = project.cjs ? 'ESM and CommonJS' : 'ESM';
      it(`${project.name} (${formats}): ${what} compile`, SLOW, () => {
        const [specifiers, names] = project.node ? [nodeSpecifiers, nodeNames] : [webSpecifiers, webNames];
        const files: Record<string, string> = { 'index.ts': source(specifiers, names, 'esm') };
        if (project.cjs) files['index.cts'] = source(specifiers, names, 'cjs');
        // The README's quick start as pasted, in the project its install line makes.
        if (project.node) files['quickstart.ts'] = quickStart;
        const at = makeProject(compiler, project, files);
        const { status, out, listed } = compile(compiler.tsc, at);
        assert.equal(out.trim(), '', `${compiler.name} in ${project.name}:\n${out}`);
        assert.equal(status, 0);
        // Both formats were checked against their own declarations.
        assert.match(listed, /node_modules\/onceonly\/dist\/index\.d\.ts/);
        if (project.cjs) assert.match(listed, /node_modules\/onceonly\/dist\/cjs\/index\.d\.ts/);
      });
    }

    it(
      'the web project has no Node types indeed: a Node entry point (Express) is refused there',
      SLOW,
      () => {
        const at = makeProject(
          compiler,
          { name: 'web-refuses-node', types: [], node: false, cjs: false },
          {
            'index.ts': `${source(webSpecifiers, webNames, 'esm')}import { webhook } from 'onceonly/express';\nvoid webhook;\n`,
          },
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
