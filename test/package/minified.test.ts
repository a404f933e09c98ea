/**
 * The error classes survive an app's minifier. A production bundle renames classes (esbuild: `n`,
 * `t`) or leaves them anonymous (Next.js's: `class extends n`, named ""). The cross-copy
 * `instanceof` compares class names, so before the classes named themselves a Next.js production
 * build answered every rejected delivery as 413 too-large (every anonymous class matched every
 * other). Here the sources are bundled and minified by esbuild, then checked against the unminified
 * copy (an app with two copies: its bundle and a dependency's): each error is an instance of its
 * class and its ancestors in both copies and of no other class, and keeps its name.
 */
import { strict as assert } from 'node:assert';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import * as source from '../../src/errors.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const dir = join(root, '.tmp', `minified-${process.pid}`);
after(() => rmSync(dir, { recursive: true, force: true }));

type ErrorClass = new (...args: never[]) => Error;
type Errors = Record<string, unknown>;

/** One instance of each error class the package exports, built the same way in either copy. */
function instances(errors: Errors): Map<string, Error> {
  const make = (name: string, ...args: unknown[]) =>
    new (errors[name] as new (...a: unknown[]) => Error)(...args);
  return new Map<string, Error>([
    ['OnceonlyError', make('OnceonlyError', 'some_code', 'x')],
    ['ConfigError', make('ConfigError', 'bad_option', 'x')],
    ['VerificationError', make('VerificationError', 'missing_header', 'x')],
    ['BodyTooLargeError', make('BodyTooLargeError', 10)],
    ['BodyTimeoutError', make('BodyTimeoutError', 10)],
    ['BodyAlreadyParsedError', make('BodyAlreadyParsedError', 'fix it')],
    ['StoreUnavailableError', make('StoreUnavailableError', 'down')],
    ['StoreTimeoutError', make('StoreTimeoutError', 'claim', 10)],
    ['StoreMisconfiguredError', make('StoreMisconfiguredError', 'store_auth_failed', 'x')],
    ['StoreFullError', make('StoreFullError', 10)],
    ['HandlerTimeoutError', make('HandlerTimeoutError', 10)],
    ['LeaseLostError', make('LeaseLostError', 'k')],
  ]);
}

/** The names of a class and its ancestors up to OnceonlyError, from the unminified sources. */
function lineage(name: string): string[] {
  const names: string[] = [];
  const classes = source as Errors;
  for (let c = classes[name]; c !== Error; c = Object.getPrototypeOf(c))
    names.push((c as { name: string }).name);
  return names;
}

describe('error classes in a minified bundle', () => {
  it('every exported error class is checked here', () => {
    const classes = Object.entries(source)
      .filter(([, value]) => typeof value === 'function' && value.prototype instanceof Error)
      .map(([name]) => name)
      .concat('OnceonlyError');
    assert.deepEqual([...new Set(classes)].sort(), [...instances(source).keys()].sort());
  });

  it('keep their names and their instanceof, within the bundle and across it and the sources', async () => {
    mkdirSync(dir, { recursive: true });
    const entry = join(dir, 'entry.ts');
    writeFileSync(entry, `export * from ${JSON.stringify(join(root, 'src/errors.ts'))};\n`);
    const outfile = join(dir, 'bundle.mjs');
    await build({
      entryPoints: [entry],
      outfile,
      bundle: true,
      minify: true,
      format: 'esm',
      platform: 'node',
      logLevel: 'silent',
    });
    const minified = (await import(pathToFileURL(outfile).href)) as Errors;
    // The minifier did rename: the check below is about a bundle whose class names are gone.
    assert.doesNotMatch(
      readFileSync(outfile, 'utf8'),
      /class VerificationError\b|\bVerificationError\s*=/,
      'esbuild kept the class names: the bundle tests nothing',
    );

    for (const [made, errors] of [
      ['bundle', instances(minified)],
      ['sources', instances(source)],
    ] as const) {
      for (const [name, error] of errors) {
        assert.equal(error.name, name, `${made}: the name of a ${name}`);
        const ancestors = lineage(name);
        for (const [copy, classes] of [
          ['bundle', minified],
          ['sources', source as Errors],
        ] as const) {
          for (const other of instances(source).keys()) {
            assert.equal(
              error instanceof (classes[other] as ErrorClass),
              ancestors.includes(other),
              `a ${name} made by the ${made} instanceof the ${copy}'s ${other}`,
            );
          }
        }
      }
    }
  });
});
