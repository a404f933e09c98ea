/**
 * DESIGN.md's import arrows, checked on every source file: the engine knows no HTTP and no
 * database, stores and providers need only the engine (and its errors), adapters only the receiver.
 */
import { strict as assert } from 'node:assert';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const src = fileURLToPath(new URL('../src', import.meta.url));

/** What each folder of src/ may import of ours (`top` is a file directly in src/). */
const allowed: Record<string, readonly string[]> = {
  core: ['core'],
  stores: ['core', 'stores', 'errors'],
  providers: ['core', 'providers', 'errors'],
  receiver: ['core', 'receiver', 'errors', 'providers/types'],
  adapters: ['receiver', 'adapters'],
  consumers: ['once', 'consumers', 'errors'],
  testing: ['core', 'testing', 'providers'],
  otel: ['core', 'otel'],
  console: ['core', 'console'],
};

function files(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) files(path, out);
    else if (path.endsWith('.ts') && !path.endsWith('.test.ts')) out.push(path);
  }
  return out;
}

/** `core`, `providers/types`, `errors`: the part of src/ a relative import lands in. */
function area(target: string): string {
  const rel = relative(src, target).replace(/\.(js|ts)$/, '');
  const [first, second] = rel.split('/');
  if (second === undefined) return first!;
  return rel === 'providers/types' ? rel : first!;
}

describe("DESIGN.md's import arrows", () => {
  for (const [folder, may] of Object.entries(allowed)) {
    it(`${folder}/ imports only ${may.join(', ')}`, () => {
      const bad: string[] = [];
      for (const file of files(join(src, folder))) {
        const text = readFileSync(file, 'utf8');
        for (const [, spec] of text.matchAll(/^(?:import|export)[^'"]*?from\s+['"](\.[^'"]+)['"]/gm)) {
          const into = area(resolve(dirname(file), spec!));
          const ok = may.some((m) => into === m || into.startsWith(`${m}/`));
          if (!ok) bad.push(`${relative(src, file)} imports ${spec}`);
        }
      }
      assert.deepEqual(bad, []);
    });
  }

  it('has no import circle, type-only imports included', () => {
    const graph = new Map<string, string[]>();
    for (const file of files(src)) {
      const deps: string[] = [];
      for (const [, spec] of readFileSync(file, 'utf8').matchAll(
        /^(?:import|export)[^'"]*?from\s+['"](\.[^'"]+)['"]/gm,
      )) {
        deps.push(resolve(dirname(file), spec!.replace(/\.js$/, '.ts')));
      }
      graph.set(file, deps);
    }
    const state = new Map<string, 'open' | 'done'>();
    const circles: string[] = [];
    const visit = (file: string, path: string[]) => {
      state.set(file, 'open');
      path.push(file);
      for (const dep of graph.get(file) ?? []) {
        if (!graph.has(dep)) continue;
        if (state.get(dep) === 'open') {
          circles.push([...path.slice(path.indexOf(dep)), dep].map((f) => relative(src, f)).join(' -> '));
        } else if (!state.has(dep)) visit(dep, path);
      }
      path.pop();
      state.set(file, 'done');
    };
    for (const file of graph.keys()) if (!state.has(file)) visit(file, []);
    assert.deepEqual(circles, []);
  });

  it('the core entry points import no database or framework package at run time', () => {
    const runtime = /^import\s+(?!type\b)[^'"]*from\s+['"]([^.'"][^'"]*)['"]/gm;
    for (const entry of ['index.ts', 'core', 'receiver', 'providers', 'testing']) {
      const path = join(src, entry);
      for (const file of statSync(path).isDirectory() ? files(path) : [path]) {
        for (const [, spec] of readFileSync(file, 'utf8').matchAll(runtime)) {
          assert.ok(spec!.startsWith('node:'), `${relative(src, file)} imports ${spec} at run time`);
        }
      }
    }
  });

  it('the receiver is layered: stages import no driver, drivers no assembly, adapters only adapter-kit', () => {
    const imports = (file: string) =>
      [...readFileSync(file, 'utf8').matchAll(/^(?:import|export)[^'"]*?from\s+['"](\.[^'"]+)['"]/gm)].map(
        ([, spec]) => relative(src, resolve(dirname(file), spec!)).replace(/\.js$/, ''),
      );
    const bad: string[] = [];
    for (const file of files(join(src, 'receiver', 'stages'))) {
      for (const to of imports(file))
        if (to === 'receiver/drivers' || to === 'receiver/receiver')
          bad.push(`${relative(src, file)} -> ${to}`);
    }
    for (const to of imports(join(src, 'receiver', 'drivers.ts')))
      if (to === 'receiver/receiver') bad.push(`receiver/drivers.ts -> ${to}`);
    for (const file of files(join(src, 'adapters'))) {
      for (const to of imports(file))
        if (to.startsWith('receiver/') && to !== 'receiver/adapter-kit')
          bad.push(`${relative(src, file)} -> ${to}`);
    }
    assert.deepEqual(bad, []);
  });

  it("holds every source file to DESIGN.md's 500 lines, comments included (Biome's own count leaves them out)", () => {
    const long = files(src)
      .map((file) => [relative(src, file), readFileSync(file, 'utf8').split('\n').length - 1] as const)
      .filter(([, lines]) => lines > 500)
      .map(([file, lines]) => `${file}: ${lines} lines`);
    assert.deepEqual(long, []);
  });
});
