/**
 * The provider interface: how a webhook sender signs its deliveries and where its event id lives.
 * A provider only verifies and describes; it never touches storage.
 */

/**
 * Read access to request headers, case-insensitive: a web `Headers` fits, and so does the receiver's
 * light view over a Node `IncomingHttpHeaders` object (no copy into a `Headers` per delivery).
 */
export interface HeaderReader {
  /** The header's value (several joined with `, `), or `null` when absent. */
  get(name: string): string | null;
}

/** One delivery as the receiver hands it to a provider: raw bytes, never re-serialised JSON. */
export interface DeliveryInput {
  /** The exact bytes of the request body. */
  readonly rawBody: Uint8Array;
  /** The request headers (case-insensitive). */
  readonly headers: HeaderReader;
  /** The full URL the provider called (needed by Twilio and Square, which sign it). */
  readonly url?: string | undefined;
  /** When the delivery was received; timestamp tolerance is measured against this. */
  readonly receivedAt: Date;
}

/** A delivery whose signature checked out. */
/** One event of a delivery that carries several, keyed on its own signed id. */
export interface BatchItem<E = unknown> {
  readonly id: string;
  /** Routes `on: { [type]: handler }` for this event. */
  readonly type?: string | undefined;
  readonly event: E;
}

export interface Verified<E = unknown> {
  /** The parsed event (usually the JSON body). */
  readonly event: E;
  /** The event's type (`invoice.paid`, `push`), used to route `on: { [type]: handler }`. */
  readonly type?: string | undefined;
  /** The provider's event id, when it sends one. */
  readonly id?: string | undefined;
  /**
   * What the dedup key is built from:
   * - `'id'`: the signed event id (`key` when given, else `id`): `provider:id`.
   * - `'body'`: a digest of the signed body, because the id is unsigned or absent and a replayer
   *   could mint a fresh one: `provider:body:<sha256>`.
   * - `'none'`: nothing usable; the delivery is `unkeyed`.
   */
  readonly dedup: 'id' | 'body' | 'none';
  /** Overrides `id` as the key material when `dedup` is `'id'`. */
  readonly key?: string | undefined;
  /**
   * A digest of the event's content for conflict detection, for providers whose retries rewrite a
   * per-attempt field (Intercom's `delivery_attempts`, Linear's `webhookTimestamp`).
   * @default SHA-256 of the raw body
   */
  readonly fingerprint?: string | undefined;
  /**
   * Set by a provider whose deliveries carry several events (SendGrid): the receiver then claims,
   * runs and confirms each on its own key (`provider:id`), so a batch that partly failed re-runs
   * only what failed. `event`, `id` and `type` are then the first event's.
   */
  readonly batch?: readonly BatchItem<E>[] | undefined;
}

/**
 * A webhook provider. `E` is the event type; `M` maps event type names to event shapes for typed
 * `on` handlers (defaults to "any name, event E").
 */
export interface Provider<E = unknown, M extends Record<string, unknown> = Record<string, E>> {
  /** Short stable name; the first segment of every dedup key (`stripe`, `github`). */
  readonly name: string;
  /** How long a completed key is remembered by default: the provider's retry window plus a margin (ms). */
  readonly retentionMs: number;
  /**
   * Verifies a delivery over its raw bytes; throws a `VerificationError` with a stable code when it
   * fails. `verify` is `authenticate` (headers, timestamp tolerance, signature) followed by parsing
   * the body and reading the event id, type and dedup key from it.
   */
  verify(input: DeliveryInput): Verified<E> | Promise<Verified<E>>;
  /**
   * Authenticates a delivery without parsing it: checks the headers, the timestamp tolerance (both
   * directions, against `receivedAt`) and the signature over the raw bytes, and throws the same
   * `VerificationError`s as {@link verify} for those checks. It does not decode or parse the body,
   * so a correctly signed body that is not JSON passes here and is refused by `verify` as
   * `invalid_body`.
   *
   * For verifying at the edge and parsing later (accept the request, queue the raw bytes, run
   * `verify` or your own parse in the consumer, with `receivedAt` set to the original receive time),
   * and for measuring the cost of the signature check alone. It shares one code path with `verify`:
   * a delivery `authenticate` accepts passes every signature check `verify` makes.
   *
   * Where the signed material lives inside the body the body must be parsed to authenticate:
   * Mailgun (timestamp, token and signature are body fields) and Linear (`webhookTimestamp` is a
   * body field), so there a body that is not JSON is `invalid_body` here too.
   *
   * Optional for custom providers; every built-in provider implements it, and the receiver keeps
   * calling `verify`.
   *
   * @example
   * // At the edge: authenticate, then queue the raw bytes for a consumer that parses them.
   * await provider.authenticate({ rawBody, headers, receivedAt });
   * await queue.send({ rawBody, headers: [...headers], receivedAt: receivedAt.toISOString() });
   */
  authenticate?(input: DeliveryInput): void | Promise<void>;
  /** Type-level only: the event map for typed `on` handlers. Never set at run time. */
  readonly __events?: M;
}

/** A provider whose `authenticate` is always present, as every built-in provider's is. */
export type AuthenticatingProvider<
  E = unknown,
  M extends Record<string, unknown> = Record<string, E>,
> = Provider<E, M> & {
  authenticate(input: DeliveryInput): void | Promise<void>;
};

/** The event type of a provider. */
export type EventOf<P> = P extends Provider<infer E, Record<string, unknown>> ? E : unknown;
/** The event map of a provider. */
export type EventMapOf<P> = P extends Provider<unknown, infer M> ? M : Record<string, unknown>;
