/**
 * A demo worker: a real HTTP receiver in its own process, whose handler applies a side effect to the
 * ledger and, at the configured rates, throws, hangs past its deadline, or kills its own process
 * with SIGKILL in the middle of the work (before the effect is written).
 */
import { createServer } from 'node:http';
import { standardWebhooks } from '../providers/standardWebhooks.js';
import { stripe } from '../providers/stripe.js';
import { toResponse } from '../receiver/http.js';
import { createReceiver } from '../receiver/receiver.js';
import type { SimProvider } from './sign.js';
import { openStore } from './stores.js';
import { listenWhenAssigned } from './wait.js';

export interface WorkerConfig {
  store: string;
  storeName: string;
  ledger: string;
  provider: SimProvider;
  secret: string;
  timeoutMs: number;
  leaseMs: number;
  killRate: number;
  throwRate: number;
  hangRate: number;
}

const config: WorkerConfig = JSON.parse(process.env.ONCEONLY_DEMO_WORKER!);
const Database = (await import('better-sqlite3')).default;
const ledger = new Database(config.ledger);
ledger.pragma('busy_timeout = 10000');
const recordRun = ledger.prepare('INSERT INTO runs (event_id, attempt, pid) VALUES (?, ?, ?)');
const applyEffect = ledger.prepare('INSERT INTO effects (event_id, attempt, pid) VALUES (?, ?, ?)');
const opened = await openStore(config.store, config.storeName);

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(t);
        reject(signal.reason);
      },
      { once: true },
    );
  });

// Effects written whose claim is not confirmed yet. A crash in that window (effect committed, confirm
// not) is the one gap no claim can close: the retry runs the effect again. Closing it takes the effect
// and the dedup row in one transaction (record(key, { tx })). The demo's kills land mid-work, so it
// waits for the window to be empty, then kills the process in the same tick. Entries are keyed by
// event and attempt, and only the delivery that ran the handler clears its own: a duplicate of the
// same event answered in-flight meanwhile must not open the window early.
const unconfirmed = new Set<string>();
const ran = (id: string | undefined, attempt: number | undefined) => `${id}#${attempt}`;

async function crash(): Promise<never> {
  while (unconfirmed.size > 0) await sleep(1);
  process.kill(process.pid, 'SIGKILL');
  return new Promise<never>(() => {});
}

const receiver = createReceiver({
  provider:
    config.provider === 'stripe'
      ? stripe({ secret: config.secret })
      : standardWebhooks({ secret: config.secret }),
  store: opened.store,
  timeout: config.timeoutMs,
  lease: config.leaseMs,
  // Demo events are never redelivered after the run: keep their keys briefly.
  retention: '10m',
  handler: async ({ id, attempt, signal }) => {
    recordRun.run(id, attempt, process.pid);
    const dice = Math.random();
    if (dice < config.killRate) {
      await sleep(Math.random() * 20);
      await crash(); // no code runs after this: no release, no confirm, for every handler in flight here
    }
    if (dice < config.killRate + config.throwRate) throw new Error('chaos: the payment API answered 502');
    if (dice < config.killRate + config.throwRate + config.hangRate)
      await sleep(config.timeoutMs * 3, signal);
    await sleep(2 + Math.random() * 10, signal); // the real work
    // A well-behaved handler commits nothing once its signal has aborted.
    if (signal.aborted) throw signal.reason;
    applyEffect.run(id, attempt, process.pid);
    unconfirmed.add(ran(id, attempt));
  },
  onOutcome: (result) => {
    // in-flight and duplicate come from other deliveries of the event; they ran no handler here.
    if (result.outcome !== 'in-flight' && result.outcome !== 'duplicate')
      unconfirmed.delete(ran(result.id, result.attempt));
  },
});

const server = createServer(async (req, res) => {
  const result = await receiver.receive({ rawBody: req, headers: req.headers, url: req.url });
  const response = toResponse(result);
  res.writeHead(response.status, Object.fromEntries(response.headers));
  res.end(Buffer.from(await response.arrayBuffer()));
});
server.keepAliveTimeout = 5_000;
listenWhenAssigned(server);
