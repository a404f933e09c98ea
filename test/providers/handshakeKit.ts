/**
 * Helpers for the providers whose senders confirm an endpoint before they deliver (group B of
 * issue 15): a receiver over a store that fails the test if anything touches it, a handler that
 * counts, and a way to send any method with a URL.
 */
import { strict as assert } from 'node:assert';
import { createReceiver, type DeliveryResult, memoryStore, type Store } from '../../src/index.js';
import type { Provider } from '../../src/providers/types.js';
import { NOW } from './kit.js';

/** A store that records every call it is asked to make (and refuses them when `strict`). */
export function watchedStore(strict: boolean): { store: Store; touched: string[] } {
  const touched: string[] = [];
  const store = memoryStore();
  const watched = new Proxy(store, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value === 'function' && prop !== 'close') {
        return (...args: unknown[]) => {
          touched.push(String(prop));
          if (strict) throw new Error(`the store was touched: ${String(prop)}`);
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      }
      return value;
    },
  });
  return { store: watched, touched };
}

export interface Sent {
  method?: string;
  body?: string;
  headers?: Record<string, string>;
  url?: string;
  at?: Date;
}

/**
 * A receiver for `provider`: `send` delivers a request (or `receiver.fetch` a `Request`); `ran()`
 * counts handler runs and `events` holds the events it got; `touched` lists store calls (a strict
 * store throws on the first, so a handshake that touched it fails loudly).
 */
export function handshakeReceiver(provider: Provider<any, any>, options: { strict?: boolean } = {}) {
  const { store, touched } = watchedStore(options.strict ?? true);
  const events: unknown[] = [];
  const outcomes: DeliveryResult[] = [];
  const receiver = createReceiver({
    provider,
    store,
    handler: (event) => {
      events.push(event);
    },
    onOutcome: (r) => {
      outcomes.push(r);
    },
    logger: false,
  });
  const send = (s: Sent) =>
    receiver.receive({
      method: s.method ?? 'POST',
      rawBody: s.body ?? '',
      headers: s.headers ?? {},
      url: s.url,
      receivedAt: s.at ?? NOW,
    });
  return { receiver, send, ran: () => events.length, events, touched, outcomes };
}

/** The result is a handshake answer with `status` and, when given, `body` as its text. */
export async function assertHandshake(
  result: DeliveryResult,
  expected: { status?: number; body?: string; json?: unknown; headers?: Record<string, string> },
): Promise<void> {
  assert.equal(result.outcome, 'handshake', `${result.outcome} ${result.code ?? ''}`);
  assert.equal(result.status, expected.status ?? 200);
  assert.equal(result.key, undefined, 'a handshake has no key');
  const response = result.response;
  assert.ok(response, 'a handshake carries its response');
  for (const [name, value] of Object.entries(expected.headers ?? {})) {
    assert.equal(response.headers.get(name), value, name);
  }
  if (expected.body !== undefined) assert.equal(await response.text(), expected.body);
  if (expected.json !== undefined) assert.deepEqual(await response.json(), expected.json);
}

/** The result is a rejection with `code`, carrying no handshake response. */
export function assertRefused(result: DeliveryResult, code: string): void {
  assert.equal(result.outcome, 'rejected', `expected rejected, got ${result.outcome}`);
  assert.equal(result.code, code);
  assert.equal(result.response, undefined);
}
