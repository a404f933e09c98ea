/**
 * `createReceiver`: the options resolved into the receiver's core (core.ts), and the receiver's
 * methods as drivers over its stages (drivers.ts, stages/). See docs/architecture.md.
 */
import { parsePositiveDuration } from '../core/duration.js';
import { checkHealth, type HealthReport } from '../core/health.js';
import { leaseNow } from '../core/timers.js';
import { ConfigError } from '../errors.js';
import type { Provider } from '../providers/types.js';
import { createCore, type ReceiverCore } from './core.js';
import { fetchResponse, receive, runTaken, takeFailed } from './drivers.js';
import { callSite } from './spaces.js';
import type { HealthCheckOptions, Receiver, ReceiverOptions } from './types.js';
import { type InboxWorker, startWorkerLoop, takeDue, type WorkerOptions } from './worker-loop.js';

export type { Logger } from '../core/logger.js';
export { logEntryFor, warningFor } from './log-entry.js';
export type { DeliveryResult, Outcome } from './result.js';
export type {
  Handler,
  HandlerContext,
  HealthCheckOptions,
  ReceiveInput,
  Receiver,
  ReceiverOptions,
} from './types.js';

/**
 * Receives webhooks safely: verify over the raw bytes, claim the event under a short lease, run the
 * handler, confirm for the provider's retry window or release for the retry.
 *
 * @example
 * const receiver = createReceiver({
 *   provider: stripe({ secret: process.env.STRIPE_WEBHOOK_SECRET! }),
 *   store: memoryStore(),
 *   on: { 'invoice.paid': async ({ event }) => markPaid(event.data.object.id) },
 * });
 * export const POST = receiver.fetch;
 */
export function createReceiver<P extends Provider<any, any>>(options: ReceiverOptions<P>): Receiver {
  // Here, not in createCore: the call site is read at a fixed depth below this function.
  const core = createCore(options, callSite());
  return {
    maxBodyBytes: core.maxBodyBytes,
    receive: (input) => receive(core, input),
    fetch: (request) => fetchResponse(core, request),
    startWorker(workerOptions: WorkerOptions = {}): InboxWorker {
      const box = requireInbox(core, 'startWorker()');
      return startWorkerLoop(
        {
          inbox: box,
          space: core.space,
          leaseMs: core.timings.leaseMs,
          storeTimeoutMs: core.timings.storeTimeoutMs,
          run: (job, takenAt, handlerEnded) => runTaken(core, job, takenAt, handlerEnded),
          takeFailed: (error) => takeFailed(core, error),
        },
        workerOptions,
        core.wakers,
      );
    },
    async runDue({ limit = 100 }: { limit?: number } = {}): Promise<number> {
      const box = requireInbox(core, 'runDue()');
      const takenAt = leaseNow();
      const { leaseMs, storeTimeoutMs } = core.timings;
      const jobs = await takeDue({ inbox: box, space: core.space, leaseMs, storeTimeoutMs }, limit);
      await Promise.all(jobs.map((job) => runTaken(core, job, takenAt)));
      return jobs.length;
    },
    health: (healthOptions) => health(core, healthOptions),
  };
}

function requireInbox(core: ReceiverCore, what: string) {
  if (!core.inbox || !core.policy) {
    throw new ConfigError(
      'invalid_option',
      `onceonly: ${what} needs a receiver in inbox mode (createReceiver({ inbox: true }))`,
    );
  }
  return core.inbox;
}

/** `receiver.health()`: the store's health, and this receiver's own check of other apps' entries. */
async function health(core: ReceiverCore, options: HealthCheckOptions = {}): Promise<HealthReport> {
  const report = await checkHealth(core.store, {
    timeoutMs:
      options.timeout === undefined
        ? core.timings.storeTimeoutMs
        : parsePositiveDuration(options.timeout, 'health timeout'),
    maxClockSkewMs: parsePositiveDuration(options.maxClockSkew ?? '2s', 'health maxClockSkew'),
    inbox: core.inbox !== undefined,
  });
  const clash = core.clashes.check(core.space);
  return clash ? { ...report, ok: false, checks: [...report.checks, clash] } : report;
}
