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

/**
 * A request as a provider's {@link Provider.handshake} sees it: a delivery plus its HTTP method. The
 * body is empty for GET and HEAD; `url` carries the query string (Meta's `hub.challenge`).
 */
export interface HandshakeRequest extends DeliveryInput {
  /** The HTTP method, upper case: `'GET'`, `'POST'`. */
  readonly method: string;
}

/**
 * What a provider answers to a verification handshake; the receiver turns it into the response,
 * with `Onceonly-Outcome: handshake`, and reports the outcome `handshake`.
 */
export interface HandshakeAnswer {
  /** @default 200 */
  readonly status?: number | undefined;
  /**
   * The response body: a string is sent as `text/plain`, anything else as JSON.
   * @default no body
   */
  readonly body?: string | Record<string, unknown> | undefined;
  /** Extra response headers (Asana's `X-Hook-Secret` echo). */
  readonly headers?: Readonly<Record<string, string>> | undefined;
}

/** One event of a delivery that carries several, keyed on its own signed id. */
export interface BatchItem<E = unknown> {
  readonly id: string;
  /** Routes `on: { [type]: handler }` for this event. */
  readonly type?: string | undefined;
  readonly event: E;
}

/** A delivery whose signature checked out. */
export interface Verified<E = unknown> {
  /** The parsed event (usually the JSON body). */
  readonly event: E;
  /** The event's type (`invoice.paid`, `push`), used to route `on: { [type]: handler }`. */
  readonly type?: string | undefined;
  /**
   * Whether the signature covers `type` (it was read from the signed body or a signed header). When
   * it does not (GitHub's `X-GitHub-Event`, Shopify's `X-Shopify-Topic`), a captured body could be
   * resent under another type, so the receiver binds the type into the fingerprint and remembers
   * even deliveries it ignores: a signed body seen once never runs a handler under another type.
   * @default false
   */
  readonly typeSigned?: boolean | undefined;
  /** The provider's event id, when it sends one. */
  readonly id?: string | undefined;
  /**
   * What the dedup key is built from:
   * - `'id'`: the signed event id (`key` when given, else `id`): `name:id`, where `name` is the
   *   receiver's key space (the provider's name by default) and an id that is not 1-200 printable
   *   ASCII characters is hashed losslessly (`name:~sha256:<base64url>`).
   * - `'body'`: a digest of what the signature covers, because the id is unsigned or absent and a
   *   replayer could mint a fresh one: `name:~body:<sha256>` (see `signedDigest`).
   * - `'none'`: nothing usable; the delivery is `unkeyed`.
   */
  readonly dedup: 'id' | 'body' | 'none';
  /** Overrides `id` as the key material when `dedup` is `'id'`. */
  readonly key?: string | undefined;
  /**
   * For `dedup: 'body'`: SHA-256 (hex) of exactly what the signature covers, in canonical form, when
   * that is not simply the raw body. Twilio signs the URL and the sorted, decoded form parameters,
   * so `SM%31%323` and `SM123`, reordered or repeated pairs, all give one digest: a re-encoded replay
   * cannot mint a fresh key.
   * @default SHA-256 of the raw body
   */
  readonly signedDigest?: string | undefined;
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
   * A non-secret digest that tells this sender endpoint from another of the same provider (an HMAC
   * of a fixed label under its first secret, or a hash of its public key). Two receivers on one
   * store may share a key space only when they are the same endpoint (same identity) or both name
   * the space explicitly. Optional for custom providers: without it, a second receiver of the same
   * key space on a store must be given its own `name`.
   */
  readonly identity?: string | undefined;
  /**
   * True when the provider was built with `onceonly/testing`'s test keys (`...testKeys(name).trust`):
   * it accepts deliveries the kit signs, so it is for tests only. Such a provider also warns once
   * at construction. Absent otherwise.
   */
  readonly testKeys?: true | undefined;
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
  /**
   * Answers a sender's verification handshake (Slack `url_verification`, Zoom
   * `endpoint.url_validation`, Meta's `hub.challenge` GET...): the receiver calls it for every
   * request, before the method check and before {@link verify}, and when it returns an answer, sends
   * that and reports the outcome `handshake`, never touching the store or the handler. Return
   * `undefined` for anything that is not a handshake (the delivery then goes on as usual).
   *
   * It must be cheap on ordinary deliveries (look at the method, a header or a byte pattern first)
   * and must authenticate the handshake itself wherever the sender signs it: an unsigned answer that
   * computes something with the secret (Zoom's HMAC of a token the caller chose) is a signing oracle.
   * Throw a `VerificationError` to refuse it.
   */
  handshake?(request: HandshakeRequest): HandshakeAnswer | undefined | Promise<HandshakeAnswer | undefined>;
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
