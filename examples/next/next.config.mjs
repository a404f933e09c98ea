import { fileURLToPath } from 'node:url';

// Only because this example imports onceonly from the repository's sources, outside this folder.
const root = fileURLToPath(new URL('../../', import.meta.url));

/** @type {import('next').NextConfig} */
export default {
  distDir: '../../.tmp/next-example-dist',
  turbopack: { root },
  outputFileTracingRoot: root,
};
