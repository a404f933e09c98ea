/**
 * The shapes of the test kit (`signedDelivery`): what a caller asks for, what a sender's row in the
 * table declares, and what comes back.
 */

/** What `signedDelivery` takes. */
export interface SignedDeliveryOptions {
  /**
   * The event as the sender would send it: an object (serialised as the sender does, JSON for
   * most), or the exact body as text or bytes (signed as given, byte for byte). By default the
   * sender's sample event of `type`.
   */
  payload?: Record<string, unknown> | readonly unknown[] | string | Uint8Array | undefined;
  /**
   * The signing secret, in the form the sender's dashboard shows it (`whsec_...` for Stripe and the
   * Standard Webhooks senders): the same value your provider is configured with. Required by every
   * sender that signs with a shared secret.
   */
  secret?: string | undefined;
  /**
   * For the senders that sign with their own private key (AWS SNS, PayPal, Plaid, Discord,
   * SendGrid): the test key pair from `testKeys(provider)`, whose public half your provider is
   * configured with in tests only.
   */
  keys?: TestKeys | undefined;
  /**
   * The event id, where the sender puts one (in the sample body, or in its id header). With a
   * `payload` of your own, only the headers take it. @default a fresh random id in the sender's form
   */
  id?: string | undefined;
  /**
   * The event type: picks the sample event, and fills the type header where the sender has one
   * (GitHub's `X-GitHub-Event`). @default the sender's first listed type (see `senders`)
   */
  type?: string | undefined;
  /** When the delivery is signed (its timestamp). @default now */
  at?: Date | undefined;
  /**
   * The URL the delivery is sent to: the senders that sign it (Twilio, Square, SNS's subscription
   * URLs) sign this one. @default `http://localhost:3000/webhooks/<provider>`
   */
  url?: string | undefined;
}

/** One signed delivery, as the sender sends it. */
export interface SignedDelivery {
  /** The provider it imitates (the export name of `onceonly/providers`). */
  readonly provider: string;
  readonly method: 'POST';
  /** Where it is sent (and, for the senders that sign it, the URL signed). */
  readonly url: string;
  /** The headers, lower-case names, content type included. */
  readonly headers: Readonly<Record<string, string>>;
  /** The raw body, exactly the bytes that were signed. */
  readonly body: Uint8Array;
  /** The body as text (UTF-8). */
  readonly text: string;
  /**
   * The event id the delivery carries, where the sender gives one: in the sample event, or in the
   * sender's id header. With a `payload` of your own, `undefined` unless the delivery holds it.
   */
  readonly id: string | undefined;
  /** The event type it carries. */
  readonly type: string;
  /** A fresh web `Request` for it each call (a body can be read once): `app.request(d.request())`. */
  request(url?: string): Request;
  /** `fetch(url, d.init())`: method, headers and body (a fresh copy) for any HTTP client. */
  init(): { method: 'POST'; headers: Record<string, string>; body: ArrayBuffer };
}

/** A verification handshake a sender makes before (or beside) its deliveries. */
export interface HandshakeRequest {
  readonly provider: string;
  readonly method: 'GET' | 'POST';
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Uint8Array;
  readonly text: string;
  /** The value the receiver must echo back (the challenge), where there is one. */
  readonly challenge: string | undefined;
  request(url?: string): Request;
}

/**
 * A local test key pair for a sender that signs with its own private key. The private half signs
 * the kit's deliveries; `trust` is what a provider is built with in tests to accept them (a public
 * key, or a `fetch` serving a test certificate or key set, with the test root to trust). Pass it
 * explicitly: there is no switch to leave on. A provider built with it says so (`testKeys: true`
 * on the provider, and one warning at construction).
 */
export interface TestKeys<Trust extends object = Readonly<Record<string, unknown>>> {
  readonly provider: string;
  /** Spread into the provider's options: `awsSns({ topicArn, ...keys.trust })`. */
  readonly trust: Trust;
  /** @internal the private half, read by the kit's signers only. */
  readonly signer: unknown;
}

/**
 * The `fetch` a test key set is trusted through: it answers the sender's own key and certificate
 * URLs (and SNS's subscription confirmations) with the test material, and 404 anything else.
 */
export type TestKeyFetch = (
  url: string,
  init?: {
    method?: string;
    headers?: Record<string, string>;
    body?: string;
    signal?: AbortSignal;
    redirect?: string;
  },
) => Promise<Response>;

/** What each key-signed sender's provider is built with to accept the kit's deliveries. */
export type KeyTrust = {
  /** The application's public key, 64 hex characters. */
  readonly discord: { readonly publicKey: string };
  /** The verification key, base64 of its DER (as Mail Settings shows it). */
  readonly sendgrid: { readonly publicKey: string };
  /** SNS's certificate URLs answered with a test certificate, and the test root it chains to. */
  readonly awsSns: { readonly fetch: TestKeyFetch; readonly certificateRoots: readonly string[] };
  /** The webhook id signed into every delivery, PayPal's certificate URLs, and the test root. */
  readonly paypal: {
    readonly webhookId: string;
    readonly fetch: TestKeyFetch;
    readonly certificateRoots: readonly string[];
  };
  /** Plaid's `/webhook_verification_key/get` answered with the test key. */
  readonly plaid: { readonly fetch: TestKeyFetch };
};

/** The `trust` of a sender's test keys. */
export type TrustOf<P extends string> = P extends keyof KeyTrust
  ? KeyTrust[P]
  : Readonly<Record<string, unknown>>;

/** What a sender row's signer gets. */
export interface SignContext {
  readonly body: Uint8Array;
  readonly text: string;
  readonly secret: string;
  readonly keys: TestKeys | undefined;
  readonly at: Date;
  /** Unix seconds of `at`, as text. */
  readonly seconds: string;
  readonly url: string;
  readonly id: string;
  readonly type: string;
}

/** What a signer returns: the headers, and a body or URL when signing changes them (Mailgun). */
export interface Signed {
  readonly headers: Record<string, string>;
  readonly body?: string | Uint8Array | undefined;
  readonly url?: string | undefined;
}

/** What a sample builder gets. */
export interface SampleContext {
  readonly id: string;
  readonly type: string;
  readonly at: Date;
  /** Unix seconds of `at`. */
  readonly seconds: number;
  /** `at` as an ISO 8601 string. */
  readonly iso: string;
}

/** One sender in the kit's table. */
export interface SenderRow {
  /** The export name in `onceonly/providers`. */
  readonly name: string;
  /** How it signs: a shared `secret`, or its own private key (`keys`, from `testKeys`). */
  readonly credential: 'secret' | 'keys';
  /**
   * A fresh secret in the form the sender's dashboard shows it (`whsec_...`), for tests and
   * `onceonly sign`; senders with `credential: 'keys'` have none.
   */
  readonly newSecret?: (() => string) | undefined;
  /**
   * The options its provider in `onceonly/providers` is built with to accept the kit's deliveries
   * signed with `secret` (or `keys`) and sent to `url`. @default `{ secret }`
   */
  readonly providerOptions?:
    | ((credential: { secret: string; keys: TestKeys | undefined; url: string }) => Record<string, unknown>)
    | undefined;
  /**
   * Whether the credential covers the body. `false` for the token senders (GitLab, Postmark,
   * Telegram, Okta): they send a shared token, so a changed body still authenticates.
   * @default true
   */
  readonly signsBody?: boolean | undefined;
  /** A fresh event id in the sender's form. */
  readonly newId: () => string;
  /**
   * Sample events by type, the first the default, shaped as the sender sends them (from its docs
   * or published types), with the id and time where the provider reads them.
   */
  readonly samples: Readonly<Record<string, (ctx: SampleContext) => Record<string, unknown> | string>>;
  /** How an object payload becomes the body. @default JSON (`JSON.stringify`) */
  readonly encode?: ((payload: Record<string, unknown> | readonly unknown[]) => string) | undefined;
  /** @default 'application/json' */
  readonly contentType?: string | undefined;
  readonly sign: (ctx: SignContext) => Signed;
  /** For `credential: 'keys'`: makes a test key pair and what a provider needs to trust it. */
  readonly testKeys?: (() => TestKeys) | undefined;
  /** Its verification handshake, where it has one. */
  readonly handshake?: ((ctx: HandshakeContext) => HandshakeParts) | undefined;
  /**
   * Whether the handshake is made with the secret (signed with it, or carrying Meta's verify
   * token): `handshakeRequest` then refuses to make one without it. @default false
   */
  readonly handshakeNeedsSecret?: boolean | undefined;
}

export interface HandshakeContext {
  readonly secret: string;
  /** The test keys, for a sender that signs its handshake with its own key (AWS SNS). */
  readonly keys: TestKeys | undefined;
  readonly at: Date;
  readonly seconds: string;
  readonly url: string;
  readonly challenge: string;
}

export interface HandshakeParts {
  readonly method: 'GET' | 'POST';
  readonly url?: string | undefined;
  readonly headers: Record<string, string>;
  readonly body?: string | undefined;
  readonly challenge?: string | undefined;
}
