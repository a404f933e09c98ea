/**
 * What every adapter shares that needs no Node types: the receiver from its options, the body
 * source that refuses a body another parser consumed, and the 413 connection close. The web
 * adapters (Hono, Next) import only this, so their declarations type-check in a project without
 * Node's types (Workers, Deno, Bun); node-io.ts hands the same on to the Node adapters.
 */
import {
  BodyAlreadyParsedError,
  createReceiver,
  OnceonlyError,
  type Provider,
  type Receiver,
  type ReceiverOptions,
} from '../receiver/adapter-kit.js';

export type { Provider } from '../receiver/adapter-kit.js';
export { BodyAlreadyParsedError, OnceonlyError };

/** A receiver, or the options to create one: what every adapter accepts. */
export type ReceiverInput<P extends Provider<any, any> = Provider<any, any>> = Receiver | ReceiverOptions<P>;

/** Returns the receiver itself, or creates one from options. */
export function toReceiver<P extends Provider<any, any>>(input: ReceiverInput<P>): Receiver {
  return typeof (input as Receiver).receive === 'function' && typeof (input as Receiver).fetch === 'function'
    ? (input as Receiver)
    : createReceiver(input as ReceiverOptions<P>);
}

/**
 * A body source that fails as soon as it is read, with {@link BodyAlreadyParsedError}: handed to
 * `receive()` when another body parser consumed the body, so the delivery ends through the core
 * like every other (500 `body_already_parsed` with the message naming `fix`, the outcome headers,
 * `onOutcome`), whatever the framework's own error handling would have made of a thrown error.
 */
export function unreadable(fix: string): AsyncIterable<Uint8Array> {
  return {
    [Symbol.asyncIterator]: () => ({ next: () => Promise.reject(new BodyAlreadyParsedError(fix)) }),
  };
}

/**
 * A body refused at the limit was left partly unsent or unread: close the connection so the client
 * does not reuse a socket it may still be writing the old body to (@hono/node-server honours it).
 */
export function closeIfRefused(response: Response): Response {
  if (response.status === 413) {
    try {
      response.headers.set('connection', 'close');
    } catch {
      // Immutable headers on some runtimes: they manage the connection themselves.
    }
  }
  return response;
}
