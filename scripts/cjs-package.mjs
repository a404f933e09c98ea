#!/usr/bin/env node
// Marks dist/cjs as CommonJS: its .js files are require()d and its .d.ts files typed as CommonJS,
// while dist/ above it stays ESM (the root package.json's "type": "module").
import { writeFileSync } from 'node:fs';

writeFileSync(new URL('../dist/cjs/package.json', import.meta.url), '{ "type": "commonjs" }\n');
