/**
 * A delivery simulator that behaves like a real at-least-once provider: every event is sent more
 * than once (plain duplicates, and concurrent copies in the same moment), and every copy is retried
 * with exponential backoff after any non-2xx, timeout or dropped connection, re-signed each time.
 */
import { setMaxListeners } from 'node:events';
import { answerText } from './answer.js';
import { eventBody, type SignedDelivery, type SimProvider, sign } from './sign.js';

/** How the simulated sender makes event `n` and signs each attempt (the demo's three, or the test kit's). */
export interface SimSender {
  event(n: number, type: string | undefined): { id: string; body: string };
  /** Signs `body` now: every retry is signed afresh, as the providers do. */
  sign(id: string, body: string, type: string | undefined): SignedDelivery;
}

export interface SimulateOptions {
  url: string;
  provider: SimProvider;
  secret: string;
  /** Instead of `provider`'s built-in signer: any sender (`onceonly simulate --provider <any>`). */
  sender?: SimSender;
  events: number;
  /** Requests in flight at once. */
  concurrency: number;
  /** Share of events sent again after their first success (plain duplicates). */
  duplicateRate: number;
  /** Share of events sent as 3 copies at the same moment. */
  concurrentRate: number;
  /** A request with no answer after this long is a timeout (and retried). */
  requestTimeoutMs: number;
  /** Attempts per copy before giving up, like a provider's retry schedule. */
  maxAttempts: number;
  /** First retry delay; doubled each retry (with jitter), capped at maxBackoffMs. */
  backoffMs: number;
  maxBackoffMs: number;
  /** Event types, taken in turn (event n gets types[n % length]); the provider's usual one if none. */
  types?: readonly string[];
  /** A run id that makes event ids unique. */
  run: string;
  onProgress?: (done: number, total: number) => void;
  /** Stops the run early: no new requests once aborted (copies still unsent count as given up). */
  signal?: AbortSignal;
}

export interface SimulateReport {
  events: number;
  /** HTTP requests sent, retries included. */
  deliveries: number;
  /** Events at least one copy of which got a 2xx. */
  acknowledged: number;
  /** Events none of whose copies ever got a 2xx (the provider gave up). */
  gaveUp: string[];
  byOutcome: Record<string, number>;
  byStatus: Record<string, number>;
  /** Refusals (4xx other than 409) by the `code` of their JSON body (`invalid_signature`), or `http-<status>`. */
  byCode: Record<string, number>;
  /** Answers that carried an `Onceonly-Outcome` header. */
  withOutcomeHeader: number;
  timeouts: number;
  /** Requests whose connection failed: refused, reset, or closed before the answer. */
  dropped: number;
  /** Of `dropped`, the connections refused: nothing listening on the port. */
  refused: number;
  retries: number;
  seconds: number;
  eventIds: string[];
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function simulate(options: SimulateOptions): Promise<SimulateReport> {
  const started = performance.now();
  const sender: SimSender = options.sender ?? {
    event: (n, type) => eventBody(options.provider, options.run, n, type),
    sign: (id, body, type) => sign(options.provider, options.secret, id, body, type),
  };
  // Every request in flight listens on the run's signal.
  if (options.signal) setMaxListeners(0, options.signal);
  const report: SimulateReport = {
    events: options.events,
    deliveries: 0,
    acknowledged: 0,
    gaveUp: [],
    byOutcome: {},
    byStatus: {},
    byCode: {},
    withOutcomeHeader: 0,
    timeouts: 0,
    dropped: 0,
    refused: 0,
    retries: 0,
    seconds: 0,
    eventIds: [],
  };
  let slots = options.concurrency;
  const waiting: (() => void)[] = [];
  const acquire = async () => {
    if (slots > 0) {
      slots--;
      return;
    }
    await new Promise<void>((resolve) => waiting.push(resolve));
  };
  const releaseSlot = () => {
    const next = waiting.shift();
    if (next) next();
    else slots++;
  };

  /** One copy of an event, retried until a 2xx or the schedule runs out. */
  async function deliverCopy(id: string, body: string, type: string | undefined): Promise<boolean> {
    for (let attempt = 0; attempt < options.maxAttempts; attempt++) {
      if (options.signal?.aborted) return false;
      if (attempt > 0) {
        report.retries++;
        const base = Math.min(options.maxBackoffMs, options.backoffMs * 2 ** (attempt - 1));
        await sleep(base / 2 + Math.random() * base);
      }
      const signed = sender.sign(id, body, type);
      await acquire();
      report.deliveries++;
      // One controller with a plain timer: on Node 20 a timeout signal combined through
      // AbortSignal.any can be collected before it fires, leaving a request waiting forever.
      const request = new AbortController();
      const timer = setTimeout(
        () => request.abort(new DOMException('request timed out', 'TimeoutError')),
        options.requestTimeoutMs,
      );
      const stop = () => request.abort(options.signal?.reason);
      options.signal?.addEventListener('abort', stop, { once: true });
      try {
        const res = await fetch(signed.url ?? options.url, {
          method: 'POST',
          body: signed.body,
          headers: signed.headers,
          signal: request.signal,
        });
        const text = await answerText(res);
        const header = res.headers.get('onceonly-outcome');
        if (header !== null) report.withOutcomeHeader++;
        const outcome = header ?? `http-${res.status}`;
        if (res.status >= 400 && res.status < 500 && res.status !== 409) {
          const code = codeOf(text) ?? `http-${res.status}`;
          report.byCode[code] = (report.byCode[code] ?? 0) + 1;
        }
        report.byOutcome[outcome] = (report.byOutcome[outcome] ?? 0) + 1;
        report.byStatus[res.status] = (report.byStatus[res.status] ?? 0) + 1;
        if (res.status >= 200 && res.status < 300) return true;
      } catch (error) {
        if ((error as Error).name === 'TimeoutError') report.timeouts++;
        else {
          report.dropped++;
          if ((error as { cause?: { code?: unknown } }).cause?.code === 'ECONNREFUSED') report.refused++;
        }
      } finally {
        clearTimeout(timer);
        options.signal?.removeEventListener('abort', stop);
        releaseSlot();
      }
    }
    return false;
  }

  let done = 0;
  async function deliverEvent(n: number): Promise<void> {
    const type = options.types?.length ? options.types[n % options.types.length] : undefined;
    const { id, body } = sender.event(n, type);
    report.eventIds[n] = id;
    const copies: Promise<boolean>[] = [deliverCopy(id, body, type)];
    if (Math.random() < options.concurrentRate)
      copies.push(deliverCopy(id, body, type), deliverCopy(id, body, type));
    const results = await Promise.all(copies);
    const ok = results.some(Boolean);
    // Providers sometimes deliver again after a success: a plain duplicate.
    if (ok && Math.random() < options.duplicateRate) await deliverCopy(id, body, type);
    if (ok) report.acknowledged++;
    else report.gaveUp.push(id);
    options.onProgress?.(++done, options.events);
  }

  // Events arrive over time rather than all at once; a bounded number of event chains run together.
  let next = 0;
  const lanes = Array.from({ length: Math.min(options.events, options.concurrency * 2) }, async () => {
    while (next < options.events) await deliverEvent(next++);
  });
  await Promise.all(lanes);
  report.seconds = (performance.now() - started) / 1000;
  return report;
}

/** The stable `code` of a refusal's JSON body (onceonly answers `{ outcome, code, message }`). */
function codeOf(text: string): string | undefined {
  try {
    const code = (JSON.parse(text) as { code?: unknown }).code;
    return typeof code === 'string' && /^[a-z0-9_.-]{1,64}$/i.test(code) ? code : undefined;
  } catch {
    return undefined;
  }
}
