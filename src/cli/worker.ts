/**
 * A demo worker: a real HTTP receiver in its own process, whose handler applies a side effect to the
 * ledger and, at the configured rates, throws, hangs past its deadline, or kills its own process
 * with SIGKILL in the middle of the work (before the effect is written). With `--effects api` or
 * `api-naive` it also charges the event at the primary's payments API (demo/api-effect.ts), and the
 * kills land after that call instead.
 *
 * In inbox and hybrid modes a process has a role (ONCEONLY_DEMO_ROLE): `web` accepts deliveries
 * (and, hybrid, runs them inline within the budget), `worker` runs the inbox's entries and listens
 * on nothing, `both` does the two (the memory store, one process). Kills hit the processes that run
 * handlers apart from the web: a killed web process fails the deliveries it has not accepted yet,
 * which no mode can save for a sender that never retries (test/faults/inbox-crash-<store>.test.ts kills
 * web processes right after the accept instead).
 */
import { createServer } from 'node:http';
import { parseDuration } from '../core/duration.js';
import { DEFAULT_STORE_TIMEOUT } from '../core/timings.js';
import { github } from '../providers/github.js';
import { standardWebhooks } from '../providers/standardWebhooks.js';
import { stripe } from '../providers/stripe.js';
import { toResponse } from '../receiver/http.js';
import { createReceiver } from '../receiver/receiver.js';
import type { HandlerContext } from '../receiver/types.js';
import { CHARGE_KILLS, type ChargeKill, chargeEvent, type DemoEffects } from './demo/api-effect.js';
import { ledgerWriter } from './demo/ledger.js';
import { eventIdOf, type SimProvider } from './sign.js';
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
  /** inline (today's), inbox (accept, then workers), hybrid (inline within `inlineMs`, then the inbox). */
  mode: DemoMode;
  inlineMs: number;
  maxAttempts: number;
  /** Where the handler's effect goes: the ledger alone, or the payments API too (see demo/api-effect.ts). */
  effects: DemoEffects;
  /** The payments API (`--effects api` and `api-naive`), run by the primary. */
  paymentsUrl?: string;
}

export type DemoMode = 'inline' | 'inbox' | 'hybrid';
export type DemoRole = 'web' | 'worker' | 'both';

const config: WorkerConfig = JSON.parse(process.env.ONCEONLY_DEMO_WORKER!);
const ledger = ledgerWriter(config.ledger);
/**
 * The effect is appended only while the run's deadline is still ahead by a margin (one synchronous
 * write follows the check, so nothing can use up the margin between them). The signal alone is not
 * enough: it aborts when the deadline's timer fires, which a busy host runs late, and a run that
 * ends past its deadline is failed and retried, whatever it committed (the effect would apply twice).
 */
const COMMIT_MARGIN_MS = Math.max(50, Math.floor(config.timeoutMs / 4));
const opened = await openStore(config.store, config.storeName);
const role = (process.env.ONCEONLY_DEMO_ROLE ?? 'web') as DemoRole;
// Kills strike where handlers run apart from the web: everywhere inline, in worker processes otherwise.
const killRate = config.mode === 'inline' || role === 'worker' ? config.killRate : 0;
// The process the primary picked kills its run number ONCEONLY_DEMO_KILL_AT (see demo.ts), or the
// next one when that kill was refused; the others die by chance.
const killAt = killRate > 0 ? Number(process.env.ONCEONLY_DEMO_KILL_AT ?? 0) : 0;
let runs = 0;
let killDue = false;

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
// stops opening the window (see `dying`), waits for it to be empty, then kills the process in the
// same tick. Entries are keyed by event and attempt, and only the delivery that ran the handler
// clears its own: a duplicate of the same event answered in-flight meanwhile must not open the
// window early.
const unconfirmed = new Set<string>();
// Runs whose handler failed here, their retry or burial still on its way to the store. A kill in
// that window would leave a burial the store made and the ledger never heard of (an event neither
// applied nor dead there, so never drained): the kill waits for these too.
const failing = new Set<string>();
/** The receiver's store deadline at most (the default's bound: the demo does not set it). */
const STORE_DEADLINE_MS = parseDuration(DEFAULT_STORE_TIMEOUT);
const ran = (key: string | undefined, attempt: number | undefined) => `${key}#${attempt}`;
// The ledger's event id of each key a handler ran here (GitHub's is in the body, not the result).
const eventOfKey = new Map<string, string | undefined>();

/** The ledger's id of the event an inbox entry holds (GitHub's is in the body), else `fallback`. */
async function storedEventId(
  key: string | undefined,
  fallback: string | undefined,
): Promise<string | undefined> {
  if (config.provider !== 'github' || key === undefined) return fallback;
  try {
    const body = (await opened.store.inbox?.get(key))?.delivery?.body;
    if (!body) return fallback;
    return eventIdOf('github', JSON.parse(Buffer.from(body).toString('utf8')), fallback) ?? fallback;
  } catch {
    return fallback;
  }
}

// The primary grants kills one at a time and only while every process is up (see demo.ts).
let asks = 0;
const asked = new Map<number, (granted: boolean) => void>();
process.on('message', (message: unknown) => {
  const answer = (message as { onceonlyKill?: { ask?: unknown; granted?: unknown } } | null)?.onceonlyKill;
  if (typeof answer?.ask !== 'number') return;
  asked.get(answer.ask)?.(answer.granted === true);
  asked.delete(answer.ask);
});
function mayKill(): Promise<boolean> {
  if (!process.send) return Promise.resolve(true);
  const ask = ++asks;
  return new Promise((resolve) => {
    asked.set(ask, resolve);
    process.send!({ onceonlyMayKill: ask });
  });
}

// Set once this process's kill is granted: from then on no handler here applies its effect (each
// waits for the end), so the kill waits only for the effects already applied to be confirmed.
let dying = false;

/**
 * Kills this process at `at` when the primary grants it (no code runs after: no release, no
 * confirm, for every handler in flight here). Refused (another process is down, going down or still
 * starting): the run goes on as the dice say, and the sure kill (`due`) is asked for again at the
 * next run, so a run keeps its chaos.
 */
async function kill(id: string | undefined, at: string, due: boolean): Promise<void> {
  await sleep(Math.random() * 20);
  if (await mayKill()) {
    ledger.write('kills', { id: id ?? null, at });
    await crash();
  }
  if (due) killDue = true;
}

async function crash(): Promise<never> {
  dying = true;
  // (The failed runs' store calls end within their store deadline: wait no longer than that.)
  const failedBy = performance.now() + 2 * STORE_DEADLINE_MS;
  while (unconfirmed.size > 0 || (failing.size > 0 && performance.now() < failedBy)) await sleep(1);
  process.kill(process.pid, 'SIGKILL');
  return new Promise<never>(() => {});
}

/** One chaotic handler run: a kill, a throw or a hang as the dice say, else the effect. */
async function chaosRun(ctx: HandlerContext<unknown>): Promise<void> {
  const deadlineAt = performance.now() + config.timeoutMs;
  const { event, id: deliveryId, key, attempt, signal } = ctx;
  const id = eventIdOf(config.provider, event, deliveryId);
  if (key !== undefined) eventOfKey.set(key, id);
  ledger.write('runs', { id: id ?? null, attempt, pid: process.pid });
  const dice = Math.random();
  if (++runs === killAt) killDue = true;
  const api = config.effects === 'ledger' ? undefined : config.effects;
  // The API effect's kills land after the call, where the run has charged and not yet ended.
  let chargeKill: ChargeKill | undefined;
  let due = false;
  if (killDue || dice < killRate) {
    due = killDue;
    killDue = false;
    if (api) chargeKill = CHARGE_KILLS[Math.floor(Math.random() * CHARGE_KILLS.length)];
    else await kill(id, 'mid-work', due);
  }
  // A kill refused is a throw instead (the dice say so), as are throws; with the API effect they
  // strike before the call or after it (a later step failed), half and half, and after a kill's.
  const late = chargeKill !== undefined || (api !== undefined && Math.random() < 0.5);
  const chaos = async () => {
    if (dice < killRate + config.throwRate) throw new Error('chaos: the payment API answered 502');
    if (dice < killRate + config.throwRate + config.hangRate) await sleep(config.timeoutMs * 3, signal);
  };
  if (!late) await chaos();
  await sleep(2 + Math.random() * 10, signal); // the real work
  if (api)
    await chargeEvent(ctx, api, config.paymentsUrl!, String(id), chargeKill, (at) => kill(id, at, due));
  if (late) await chaos();
  // A well-behaved handler commits nothing once its signal has aborted.
  if (signal.aborted) throw signal.reason;
  // This process is about to be killed: the run dies here, before its effect, like the killed one.
  if (dying) await new Promise<never>(() => {});
  if (performance.now() > deadlineAt - COMMIT_MARGIN_MS) {
    // Too near the deadline to commit and end before it: the run ends at its deadline, uncommitted.
    await sleep(config.timeoutMs, signal);
    throw new Error('ended at its deadline before its effect');
  }
  ledger.write('effects', { id: id ?? null, attempt, pid: process.pid });
  unconfirmed.add(ran(key, attempt));
}

const provider =
  config.provider === 'stripe'
    ? stripe({ secret: config.secret })
    : config.provider === 'github'
      ? github({ secret: config.secret })
      : standardWebhooks({ secret: config.secret });
const receiver = createReceiver({
  provider,
  store: opened.store,
  timeout: config.timeoutMs,
  lease: config.leaseMs,
  // Demo events are never redelivered after the run: keep their keys briefly.
  retention: '10m',
  inbox: config.mode !== 'inline' && {
    inline: config.mode === 'hybrid' ? config.inlineMs : undefined,
    maxAttempts: config.maxAttempts,
    // Seconds, not hours: the demo waits for its inbox to drain.
    backoff: { initial: '100ms', max: '2s' },
  },
  // The chaos's own failures are counted in the report; anything else (the store) is printed.
  logger: {
    warn: (message: string) => console.warn(message),
    error: (message: string) => {
      if (!/: handler_(failed|timeout): |: dead in the inbox: /.test(message)) console.error(message);
    },
  },
  handler: (ctx) =>
    chaosRun(ctx).catch((error: unknown) => {
      failing.add(ran(ctx.key, ctx.attempt));
      throw error;
    }),
  onOutcome: (result) => {
    // in-flight and duplicate come from other deliveries of the event; they ran no handler here.
    if (result.outcome !== 'in-flight' && result.outcome !== 'duplicate') {
      unconfirmed.delete(ran(result.key, result.attempt));
      failing.delete(ran(result.key, result.attempt));
    }
    const id = result.key === undefined ? undefined : eventOfKey.get(result.key);
    // A failed run: inline's 500, an inbox run to be retried, a hybrid one failed within its budget.
    const failed =
      result.outcome === 'failed' || (result.outcome === 'accepted' && result.error !== undefined);
    if (failed && result.attempt !== undefined)
      ledger.write('failures', {
        id: id ?? result.id ?? null,
        attempt: result.attempt,
        timeout: (result.error as { code?: unknown } | undefined)?.code === 'handler_timeout',
      });
    if (result.outcome === 'dead') {
      // An entry buried without running here (its attempts spent by runs killed elsewhere) has no
      // event id in this process: read it from the entry the inbox kept.
      if (id !== undefined) ledger.write('dead', { id, attempt: result.attempt ?? 0 });
      else {
        const burial = `dead:${result.key}`;
        failing.add(burial);
        void storedEventId(result.key, result.id).then((at) => {
          ledger.write('dead', { id: at ?? null, attempt: result.attempt ?? 0 });
          failing.delete(burial);
        });
      }
    }
    if (result.outcome === 'lease-lost')
      ledger.write('lease_lost', { id: id ?? result.id ?? null, attempt: result.attempt ?? null });
  },
});

if (role !== 'web') {
  receiver.startWorker({ concurrency: 8, pollInterval: '100ms' });
  if (role === 'worker') process.send?.({ onceonlyWorking: true });
}

const server = createServer(async (req, res) => {
  const result = await receiver.receive({ rawBody: req, headers: req.headers, url: req.url });
  const response = toResponse(result);
  res.writeHead(response.status, Object.fromEntries(response.headers));
  res.end(Buffer.from(await response.arrayBuffer()));
});
server.keepAliveTimeout = 5_000;
if (role !== 'worker') listenWhenAssigned(server);
