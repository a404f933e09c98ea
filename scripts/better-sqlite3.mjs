// `--import ./scripts/better-sqlite3.mjs` (or in NODE_OPTIONS, so every child process has it too):
// a bare import of better-sqlite3 that the root install cannot satisfy (the root install leaves that
// native build out) resolves from the on-demand workspace test/better-sqlite3 instead, so the test
// files, the benchmarks and `npm start` import it as users do. Used on Node.js before 22.16, which
// has no node:sqlite the store takes (scripts/test.mjs, scripts/start.mjs, the bench script).
import { register } from 'node:module';

register(
  `data:text/javascript,${encodeURIComponent(`
const workspace = ${JSON.stringify(new URL('../test/better-sqlite3/package.json', import.meta.url).href)};
export async function resolve(specifier, context, next) {
  try {
    return await next(specifier, context);
  } catch (error) {
    if (error?.code !== 'ERR_MODULE_NOT_FOUND' || !/^better-sqlite3(\\/|$)/.test(specifier)) throw error;
    return next(specifier, { ...context, parentURL: workspace });
  }
}`)}`,
);
