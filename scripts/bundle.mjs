// A TypeScript module and every module of the repository it reaches, as one JavaScript file
// (esbuild; packages stay imports, resolved where the module is). The test runner runs each test
// file this way, and the suites that restart processes again and again (the fault fleets) start
// them from one: through tsx every process paid its loader hooks on every import, about 0.5 s to 1 s
// of CPU a process on a loaded 2-core machine (about a third of a short file's CPU).
//
// The file is written in `.bundles/` of the nearest folder above the module with a node_modules (so
// its package imports resolve as the module's did, from a workspace's own too; .gitignore'd). Each
// module keeps its own `import.meta.url`, `dirname` and `filename`: paths relative to a module
// still point where they did. Stack traces point at the TypeScript (an inline source map, read
// with --enable-source-maps).
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';

/** @type {import('esbuild').Plugin} */
const ownImportMeta = {
  name: 'own-import-meta',
  setup(b) {
    b.onLoad({ filter: /\.[cm]?tsx?$/ }, async (args) => ({
      contents: (await readFile(args.path, 'utf8'))
        .replaceAll('import.meta.dirname', JSON.stringify(dirname(args.path)))
        .replaceAll('import.meta.filename', JSON.stringify(args.path))
        .replaceAll('import.meta.url', JSON.stringify(pathToFileURL(args.path).href)),
      loader: args.path.endsWith('x') ? 'tsx' : 'ts',
    }));
  },
};

/**
 * The path a bundle of `entry` tagged `tag` is written to: in `.bundles/` of the nearest folder
 * above it with a node_modules (the repository's root, or a workspace's own folder), so its package
 * imports resolve from there as the module's did; never beside the sources (a file written in src/
 * would make the build look stale to the CLI suites' check).
 */
export function bundlePath(entry, tag) {
  let base = dirname(entry);
  while (!existsSync(join(base, 'node_modules')) && dirname(base) !== base) base = dirname(base);
  const name = relative(base, entry)
    .replace(/\.[cm]?tsx?$/, '')
    .replace(/[^A-Za-z0-9_-]+/g, '.');
  return join(base, '.bundles', `${name}.${tag}.bundle.mjs`);
}

/**
 * Bundles `entry` (an absolute path) into {@link bundlePath}; resolves to that path. With
 * `contents`, the entry is that TypeScript instead of the file's (its imports resolved from the
 * entry's folder): a process that puts modules named at run time together, as one bundle.
 */
export async function bundle(entry, tag, contents) {
  const outfile = bundlePath(entry, tag);
  await build({
    ...(contents === undefined
      ? { entryPoints: [entry] }
      : { stdin: { contents, resolveDir: dirname(entry), sourcefile: entry, loader: 'ts' } }),
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    sourcemap: 'inline',
    sourcesContent: false,
    plugins: [ownImportMeta],
    logLevel: 'silent',
  });
  return outfile;
}
