/**
 * Next.js App Router + onceonly: GitHub webhooks received once at POST /webhooks. Run from
 * `examples/next`: `npx next dev` (it prints the URL). In your app this file is
 * `app/webhooks/route.ts` with the same code, the imports are `onceonly`, `onceonly/next` and
 * `onceonly/providers`, and no next.config is needed. (Plain JS here so that `next dev` in this
 * folder does not set up TypeScript and install @types/react into the repository.)
 */
import { webhook } from '../../../../src/adapters/next.ts';
import { memoryStore } from '../../../../src/index.ts';
import { github } from '../../../../src/providers/index.ts';

export const POST = webhook({
  provider: github({ secret: process.env.GITHUB_WEBHOOK_SECRET ?? 'dev-secret' }),
  store: memoryStore(), // one process only; use redisStore / postgresStore in production
  handler: async ({ type, attempt }) => {
    console.log(`${type} received (attempt ${attempt})`);
  },
});
