/**
 * Express + onceonly: GitHub webhooks received once. Run from this folder: `npx tsx server.ts`
 * (Express 4 works the same).
 * It imports the package by name, as your app would (the repository's `npm install` builds it).
 */
import { createHmac } from 'node:crypto';
import express from 'express';
import { memoryStore } from 'onceonly';
import { webhook } from 'onceonly/express';
import { github } from 'onceonly/providers';

const secret = process.env.GITHUB_WEBHOOK_SECRET ?? 'dev-secret';
const app = express();

// The webhook route goes above the app's JSON parser: it reads the exact bytes itself.
app.post(
  '/webhooks',
  webhook({
    provider: github({ secret }),
    store: memoryStore(), // one process only; use redisStore / postgresStore when you run several
    handler: async ({ event, type, attempt }) => {
      console.log(`${type} received (attempt ${attempt})`, Object.keys(event as object).join(', '));
    },
  }),
);
app.use(express.json());
app.get('/', (_req, res) => {
  res.send('ok');
});

const port = Number(process.env.PORT ?? 3000);
const server = app.listen(port, '127.0.0.1', () => {
  const { port: bound } = server.address() as { port: number }; // PORT=0 picks a free port
  const url = `http://127.0.0.1:${bound}/webhooks`;
  const body = JSON.stringify({ zen: 'Keep it logically awesome.', hook_id: 1 });
  const signature = `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
  console.log(`onceonly + Express listening on ${url}`);
  console.log('send a signed delivery twice (processed, then duplicate):');
  console.log(
    `  curl -si ${url} -H 'content-type: application/json' -H 'x-github-event: ping' -H 'x-hub-signature-256: ${signature}' -d '${body}'`,
  );
});
