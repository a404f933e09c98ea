/**
 * Hono + onceonly: GitHub webhooks received once. Run from this folder: `npx tsx server.ts` (Node,
 * through @hono/node-server). On Bun, Deno or Workers export `app` (or `app.fetch`) instead of
 * calling `serve`.
 * It imports the package by name, as your app would (the repository's `npm install` builds it).
 */
import { createHmac } from 'node:crypto';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { memoryStore } from 'onceonly';
import { webhook } from 'onceonly/hono';
import { github } from 'onceonly/providers';

const secret = process.env.GITHUB_WEBHOOK_SECRET ?? 'dev-secret';
const app = new Hono();

app.post(
  '/webhooks',
  webhook({
    provider: github({ secret }),
    store: memoryStore(), // one process only; use redisStore / postgresStore when you run several
    handler: async ({ type, attempt }) => {
      console.log(`${type} received (attempt ${attempt})`);
    },
  }),
);

const port = Number(process.env.PORT ?? 3000);
serve({ fetch: app.fetch, port, hostname: '127.0.0.1' }, () => {
  const url = `http://127.0.0.1:${port}/webhooks`;
  const body = JSON.stringify({ zen: 'Keep it logically awesome.', hook_id: 1 });
  const signature = `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
  console.log(`onceonly + Hono listening on ${url}`);
  console.log('send a signed delivery twice (processed, then duplicate):');
  console.log(
    `  curl -si ${url} -H 'content-type: application/json' -H 'x-github-event: ping' -H 'x-hub-signature-256: ${signature}' -d '${body}'`,
  );
});
