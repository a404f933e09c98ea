/**
 * `npm run example`: the quick start over real HTTP, the same program as `npx onceonly example` of
 * the installed package (its code: src/cli/example.ts). A receiver on a loopback port and a sender
 * that behaves like real providers do (at least once); `npm run example -- --serve` then stays up and
 * prints a signed curl to send by hand.
 */
import { example } from '../src/cli/example.js';

process.exitCode = await example(process.argv.slice(2));
