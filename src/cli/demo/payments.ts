/**
 * A payments API on loopback, for the demo's `--effects api` and the fault suite: `POST /charges`
 * with a JSON body `{ event, amount }` makes a charge, and honours an `Idempotency-Key` header the
 * way Stripe does: the same key with the same body answers the first charge's answer again (with
 * `Idempotent-Replayed: true`) and charges nothing; the same key with another body is a 400
 * (`idempotency_error`); a request without a key always makes a new charge. Keys are never pruned
 * here (Stripe may prune them after 24 h).
 *
 * It keeps its own ledger of every charge made: the verdict on an API effect comes from the API's
 * side, not from the handler's. It runs in the process that starts it (the demo's primary, the
 * test), never in a process the chaos kills.
 *
 * The answer's headers go out as soon as the charge is made, and its body a few milliseconds later:
 * a caller killed in between was charged and never read the answer (`postCharge`'s `onCharged`).
 */
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One charge the API made. */
export interface Charge {
  id: string;
  event: string;
  amount: number;
  /** The Idempotency-Key it was made under, null without one. */
  key: string | null;
}

/** What the API's ledger says of some events (a run's). */
export interface PaymentCounts {
  /** Charges made for those events (requests answered from a key made none). */
  charges: number;
  /** Events charged more than once. */
  chargedTwice: number;
  /** Charges past the first of every event. */
  extraCharges: number;
  /** Events never charged (of those that should have been). */
  neverCharged: number;
  /** Requests answered from their Idempotency-Key: a repeat that charged nothing. */
  replayed: number;
  /** Requests refused for reusing a key with another body (400 idempotency_error). */
  keyMisuse: number;
}

export interface PaymentsServer {
  /** `http://127.0.0.1:<port>`: POST `${url}/charges`. */
  readonly url: string;
  /** Every charge made, in order. */
  readonly charges: readonly Charge[];
  /** Well-formed charge requests by event: charged, answered from a key, or refused for its key. */
  readonly requests: ReadonlyMap<string, number>;
  /** The figures of the events `eventIds`, from this API's own ledger. */
  counts(eventIds: readonly string[]): PaymentCounts;
  close(): Promise<void>;
}

interface Answer {
  status: number;
  body: string;
}

const BODY_MAX = 64 * 1024;

/** Starts the API on a free loopback port. `answerDelayMs`: between the answer's headers and its body. */
export async function startPayments(options: { answerDelayMs?: number } = {}): Promise<PaymentsServer> {
  const delay = options.answerDelayMs ?? 5;
  const charges: Charge[] = [];
  const requests = new Map<string, number>();
  // Key -> the first request's body (as the API compares it) and its answer.
  const keys = new Map<string, { request: string; answer: Answer }>();
  // Requests answered from their key, and refused for it, by event.
  const replayed = new Map<string, number>();
  const keyMisuse = new Map<string, number>();
  const add = (m: Map<string, number>, event: string) => m.set(event, (m.get(event) ?? 0) + 1);

  const handle = (method: string | undefined, path: string, key: string | undefined, text: string) => {
    if (path !== '/charges') return { answer: error(404, 'resource_missing', `no route ${path}`) };
    if (method !== 'POST') return { answer: error(405, 'method_not_allowed', 'POST only') };
    if (key !== undefined && (key.length === 0 || key.length > 255))
      return { answer: error(400, 'idempotency_key_invalid', 'Idempotency-Key: 1 to 255 characters') };
    let parsed: { event?: unknown; amount?: unknown };
    try {
      parsed = JSON.parse(text);
    } catch {
      return { answer: error(400, 'parameter_invalid', 'the body is not JSON') };
    }
    const { event, amount } = parsed ?? {};
    if (typeof event !== 'string' || event === '' || !Number.isSafeInteger(amount) || (amount as number) <= 0)
      return { answer: error(400, 'parameter_invalid', 'want { event: string, amount: positive integer }') };
    add(requests, event);
    // The parameters as the API sees them: the same charge in another key order is the same request.
    const request = JSON.stringify({ event, amount });
    if (key !== undefined) {
      const seen = keys.get(key);
      if (seen && seen.request !== request) {
        add(keyMisuse, event);
        return {
          answer: error(
            400,
            'idempotency_error',
            'Keys for idempotent requests can only be used with the same parameters they were first used with.',
          ),
        };
      }
      if (seen) {
        add(replayed, event);
        return { answer: seen.answer, replay: true };
      }
    }
    const charge: Charge = {
      id: `ch_${charges.length + 1}`,
      event,
      amount: amount as number,
      key: key ?? null,
    };
    charges.push(charge);
    const answer = {
      status: 200,
      body: JSON.stringify({ id: charge.id, object: 'charge', event, amount, status: 'succeeded' }),
    };
    if (key !== undefined) keys.set(key, { request, answer });
    return { answer };
  };

  const server = createServer(async (req, res) => {
    let text: string;
    try {
      text = await readBody(req);
    } catch {
      res.writeHead(413).end();
      return;
    }
    const header = req.headers['idempotency-key'];
    const key = Array.isArray(header) ? header[0] : header;
    const { answer, replay } = handle(req.method, new URL(req.url ?? '/', 'http://x').pathname, key, text);
    res.writeHead(answer.status, {
      'content-type': 'application/json',
      ...(replay ? { 'idempotent-replayed': 'true' } : {}),
    });
    // Charged (or not), and said so: the body follows a moment later.
    res.flushHeaders();
    setTimeout(() => res.end(answer.body), delay);
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    charges,
    requests,
    counts(eventIds) {
      const byEvent = new Map<string, number>();
      for (const c of charges) byEvent.set(c.event, (byEvent.get(c.event) ?? 0) + 1);
      const counts = {
        charges: 0,
        chargedTwice: 0,
        extraCharges: 0,
        neverCharged: 0,
        replayed: 0,
        keyMisuse: 0,
      };
      for (const id of new Set(eventIds)) {
        const n = byEvent.get(id) ?? 0;
        counts.charges += n;
        if (n === 0) counts.neverCharged++;
        if (n > 1) counts.chargedTwice++;
        counts.extraCharges += Math.max(0, n - 1);
        counts.replayed += replayed.get(id) ?? 0;
        counts.keyMisuse += keyMisuse.get(id) ?? 0;
      }
      return counts;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function error(status: number, code: string, message: string): Answer {
  return { status, body: JSON.stringify({ error: { type: 'invalid_request_error', code, message } }) };
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > BODY_MAX) throw new Error('body too large');
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** What a charge call gives back to the handler (and keeps in its step): the charge's id. */
export interface ChargeResult {
  id: string;
  /** Answered from the Idempotency-Key: this call charged nothing. */
  replayed: boolean;
}

/** The amount of an event's charge, in cents: the same on every attempt (a key refuses another body). */
export function amountOf(event: string): number {
  let h = 0;
  for (let i = 0; i < event.length; i++) h = (h * 31 + event.charCodeAt(i)) >>> 0;
  return 100 + (h % 9_900);
}

/**
 * Charges `event` at the payments API `url`, with `idempotencyKey` when given. `onCharged` runs once
 * the answer's headers are in and before its body is read: the charge is made, its answer unread.
 * Throws on any answer but 2xx.
 */
export async function postCharge(
  url: string,
  event: string,
  options: { idempotencyKey?: string; signal?: AbortSignal; onCharged?: () => Promise<void> } = {},
): Promise<ChargeResult> {
  const res = await fetch(`${url}/charges`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(options.idempotencyKey ? { 'idempotency-key': options.idempotencyKey } : {}),
    },
    body: JSON.stringify({ event, amount: amountOf(event) }),
    signal: options.signal,
  });
  if (res.ok) await options.onCharged?.();
  const body = (await res.json()) as { id?: string; error?: { code?: string; message?: string } };
  if (!res.ok || typeof body.id !== 'string')
    throw new Error(`payments API: ${res.status} ${body.error?.code ?? ''}: ${body.error?.message ?? ''}`);
  return { id: body.id, replayed: res.headers.get('idempotent-replayed') === 'true' };
}
