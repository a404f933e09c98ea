/**
 * AWS Lambda + onceonly: Stripe webhooks received once, behind a Function URL, API Gateway (REST or
 * HTTP API) or an ALB, with the same handler. Deploy with template.yaml (`sam build && sam deploy
 * --guided`); run it locally with `npx tsx server.ts`, which serves this handler as a Function URL.
 *
 * The receiver and its store are created once per container, outside the handler, and reused by
 * every invocation the container serves.
 */
import { createReceiver, memoryStore } from 'onceonly';
import { webhook } from 'onceonly/lambda';
import { github, stripe } from 'onceonly/providers';
import { redisStore } from 'onceonly/redis';
import { sqsBatch } from 'onceonly/sqs';
import { createClient } from 'redis';

/**
 * A shared store: every container (and a retry may land on any) must see the same claims. Redis
 * here (node-redis, connected once per container, with docs/redis.md's settings for outages);
 * PostgreSQL works the same way. Without REDIS_URL the memory store keeps claims for this one
 * process only: for trying it out locally.
 */
async function sharedStore() {
  if (!process.env.REDIS_URL) return memoryStore();
  const client = createClient({
    url: process.env.REDIS_URL,
    disableOfflineQueue: true, // while disconnected, fail at once: never queue
    pingInterval: 500, // an idle connection keeps talking, so only a silent server trips socketTimeout
    socket: {
      connectTimeout: 2_000,
      reconnectStrategy: (retries) => Math.min(100 * 2 ** retries, 2_000), // never gives up
      socketTimeout: 1_000, // a server that stops answering: drop the connection, reconnect
    },
  });
  client.on('error', (error) => console.error('redis:', error.message));
  return redisStore({ client: await client.connect() });
}

const store = await sharedStore();

export const receiver = createReceiver({
  provider: stripe({ secret: process.env.STRIPE_WEBHOOK_SECRET ?? 'whsec_dev' }),
  store,
  // Below the function's timeout (template.yaml: 30 s); the remaining time caps it anyway.
  timeout: '20s',
  on: {
    'invoice.paid': async ({ event, attempt }) => {
      console.log(`invoice ${event.data.object.id} paid (attempt ${attempt})`);
    },
  },
});

/** The webhook: a Function URL, API Gateway or ALB target. */
export const handler = webhook(receiver);

/**
 * GitHub never retries and waits 10 s: its deliveries go to the inbox (answered 202 at once) and
 * `drain`, run every minute by a schedule, runs them. An entry whose run fails is retried with
 * backoff by a later `drain`; one whose function was stopped mid-run is taken again when its lease
 * runs out.
 */
export const githubReceiver = createReceiver({
  provider: github({ secret: process.env.GITHUB_WEBHOOK_SECRET ?? 'dev-secret' }),
  store,
  inbox: true,
  timeout: '20s',
  handler: async ({ type, attempt }) => {
    console.log(`github ${type} (attempt ${attempt})`);
  },
});

export const githubHandler = webhook(githubReceiver);

/** Scheduled (or SQS-triggered): runs the inbox entries due now, at most 50, in parallel. */
export const drain = async (): Promise<{ ran: number }> => ({
  ran: await githubReceiver.runDue({ limit: 50 }),
});

/** An SQS-triggered function: each message's work runs once; failed ones are redelivered. */
export const orders = sqsBatch(
  store,
  async (record, { attempt }) => {
    console.log(`order message ${record.messageId} (attempt ${attempt}): ${record.body}`);
  },
  { timeout: '20s', retention: '4d' },
);
