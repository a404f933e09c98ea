/**
 * Keys fetched from the sender (AWS SNS signing certificates, PayPal's certificates, JWKS endpoints
 * such as Plaid's): the asymmetric family's way to get a public key it was not configured with.
 *
 * A delivery may name the URL of its own key (SNS `SigningCertURL`), so the URL is checked before
 * anything is requested: https on the default port, no credentials, a host the sender's declaration
 * allows (an exact name, `*.suffix` for one or more labels before `.suffix`, or an anchored RegExp).
 * A URL that fails is refused as `untrusted_key_url` without a request. The request goes through an
 * injectable `fetch` with a timeout over the whole exchange (a slow key server is `key_unavailable`,
 * 503, never a hung delivery), a size bound, and no redirect to another host. Keys are cached per
 * URL with an expiry, at most `keyCacheSize` URLs (the least recently used is dropped), and one
 * request per URL is shared by the deliveries that arrive while it runs.
 *
 * The URL or key id comes from a request not yet authenticated, so the fetching is bounded against
 * floods: `keyFetchConcurrency` requests in flight, `keyFetchesPerMinute` started, a failed URL
 * not asked again within `keyFailureCooldown`; what is over a bound is refused `key_unavailable`
 * (503) without a request. The sets that verified a delivery are cached apart, out of reach of
 * the sets fetched for unverified requests, and are fetched again (their TTL ran out, or a key id
 * they lack) outside those two bounds: a slow flood that keeps the bucket empty would otherwise
 * refuse the real sender once its keys expire. Their own count bounds them: one request per
 * verified URL at a time, at most `keyCacheSize` URLs, each at most once per `keyRefetchCooldown`.
 *
 * Every span is measured on a clock that may step (NTP, a VM resumed): a span that reads as
 * negative or longer than it can be counts as over, so a clock set back never stretches a bound.
 */
import { createPublicKey, type JsonWebKey, type KeyObject, X509Certificate } from 'node:crypto';
import { type Duration, parseDuration, parsePositiveDuration } from '../../core/duration.js';
import { ConfigError, VerificationError } from '../../errors.js';
import { type CertificateRules, parseRoots, verifiedCertificateKey } from './certChain.js';
import { readBounded, readBoundedBytes, withinDeadline } from './exchange.js';
import { type AllowedHost, checkAllowedHosts, checkSenderUrl, untrusted } from './senderUrl.js';

export { readBounded, withinDeadline } from './exchange.js';
export { type AllowedHost, checkAllowedHosts, checkSenderUrl } from './senderUrl.js';

/** The part of `fetch` the key fetcher uses, so a test or a proxy can stand in for it. */
export type KeyFetch = (
  url: string,
  init: { signal: AbortSignal; redirect: 'manual'; headers: Record<string, string> },
) => Promise<{
  readonly status: number;
  readonly ok: boolean;
  readonly headers: { get(name: string): string | null };
  readonly body: ReadableStream<Uint8Array> | null;
  text?(): Promise<string>;
}>;

/** The options of a provider whose keys are fetched from the sender. */
export interface FetchedKeyOptions {
  /**
   * The `fetch` keys are requested with: your own for a proxy, or in tests to serve keys from a
   * local server. It is called with `redirect: 'manual'` and an abort signal.
   * @default globalThis.fetch
   * @example { fetch: (url, init) => fetch(url.replace('https://keys.example.com', local), init) }
   */
  fetch?: KeyFetch | undefined;
  /**
   * How long a fetched key set is used before it is fetched again. A key id the cached set does not
   * hold refetches at once, at most every `keyRefetchCooldown`.
   * @default '1h'
   * @example '10m'
   */
  keyCacheTtl?: Duration | undefined;
  /**
   * How soon after a fetch a key id the cached set does not hold may fetch the set again: a sender
   * that rotated in a new key is picked up at once, while forged ids cannot make every delivery a
   * request to the sender.
   * @default '30s'
   */
  keyRefetchCooldown?: Duration | undefined;
  /**
   * How many key URLs are cached at most; past it, the least recently used is dropped.
   * @default 32
   */
  keyCacheSize?: number | undefined;
  /**
   * How long one key request may take, headers and body together; past it the delivery is refused
   * as `key_unavailable` (503, so the sender retries) rather than waiting on a slow key server.
   * @default '3s'
   * @example '1s'
   */
  keyTimeout?: Duration | undefined;
  /**
   * How many key requests may be in flight at once. The key URL or key id comes from a request not
   * yet authenticated, so anyone can name new ones: past this bound a delivery needing another
   * fetch is refused as `key_unavailable` (503: a real sender retries) without a request. A key set
   * that already verified a delivery is fetched again outside this bound and the next.
   * @default 2
   */
  keyFetchConcurrency?: number | undefined;
  /**
   * How many key requests may start per minute (a bucket that refills evenly); past it, as above,
   * `key_unavailable` without a request. Keeps a flood of forged key ids from becoming a flood of
   * requests to the sender (for Plaid, authenticated calls carrying your client secret).
   * @default 10
   */
  keyFetchesPerMinute?: number | undefined;
  /**
   * How long a key URL or key id whose fetch failed is remembered: within it, a delivery naming it
   * again is refused as `key_unavailable` without a request. Keep it under the sender's retry
   * interval (AWS SNS retries 20 s apart), so a key server's passing failure costs one retry, not
   * all of them; the per-minute bound, not this, is what stops a flood of new URLs.
   * @default '10s'
   */
  keyFailureCooldown?: Duration | undefined;
  /**
   * For senders whose signing certificate is checked against a chain (AWS SNS, PayPal): the root
   * certificates (PEM) it must chain to, in place of Node's store. For tests and private set-ups
   * only: a certificate of your own CA is then trusted as the sender's, so never pass roots you do
   * not control.
   * @default Node's root certificates (`tls.rootCertificates`)
   */
  certificateRoots?: readonly string[] | undefined;
}

/** A key set: keys by their id (`kid`), and all of them in order. @internal */
export interface KeySet {
  readonly byId: ReadonlyMap<string, KeyObject>;
  readonly all: readonly KeyObject[];
}

/** What a key URL serves: PEM (an X.509 certificate or a public key) or a JSON Web Key Set. */
export type KeyFormat = 'pem' | 'jwks';

const MAX_REDIRECTS = 3;

function unavailable(label: string, why: string, cause?: unknown): VerificationError {
  return new VerificationError(
    'key_unavailable',
    `onceonly: the ${label} signing key could not be fetched: ${why}; the sender's retry may succeed`,
    { cause },
  );
}

/** Parses what a key URL served. @internal */
export function parseKeys(text: string, format: KeyFormat, now: number): KeySet {
  if (format === 'pem') {
    let key: KeyObject;
    if (text.includes('-----BEGIN CERTIFICATE-----')) {
      const cert = new X509Certificate(text);
      const from = Date.parse(cert.validFrom);
      const to = Date.parse(cert.validTo);
      if (!(from <= now && now <= to)) throw new Error('the certificate is expired or not yet valid');
      key = cert.publicKey;
    } else key = createPublicKey(text);
    return { byId: new Map(), all: [key] };
  }
  const doc = JSON.parse(text) as { keys?: unknown };
  if (!Array.isArray(doc.keys)) throw new Error('the key set has no keys array');
  const byId = new Map<string, KeyObject>();
  const all: KeyObject[] = [];
  for (const jwk of doc.keys as (JsonWebKey & { kid?: unknown; use?: unknown })[]) {
    if (jwk === null || typeof jwk !== 'object') continue;
    if (jwk.use !== undefined && jwk.use !== 'sig') continue;
    // A private key published by mistake must not be taken as a public one.
    if ('d' in jwk) continue;
    let key: KeyObject;
    try {
      key = createPublicKey({ key: jwk, format: 'jwk' });
    } catch {
      continue;
    }
    all.push(key);
    if (typeof jwk.kid === 'string' && !byId.has(jwk.kid)) byId.set(jwk.kid, key);
  }
  if (all.length === 0) throw new Error('the key set holds no usable public key');
  return { byId, all };
}

interface Entry {
  readonly keys: Promise<KeySet>;
  readonly fetchedAt: number;
  readonly expiresAt: number;
}

/** A map used as a least-recently-used cache of at most `size` entries. */
function touch<V>(map: Map<string, V>, id: string, value: V, size: number): void {
  map.delete(id);
  map.set(id, value);
  while (map.size > size) {
    const oldest = map.keys().next().value;
    if (oldest === undefined) break;
    map.delete(oldest);
  }
}

function positiveInteger(value: number, name: string): number {
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new ConfigError('invalid_option', `onceonly: ${name} must be a positive integer, got ${value}`);
  }
  return value;
}

/**
 * Whether `until` is still ahead of `now` on a clock that may step: true while `now < until` and
 * no further than `span` away (the longest it can be when it was set). A clock set back past the
 * moment `until` was set reads it as over, instead of stretching it by the step.
 */
function ahead(now: number, until: number, span: number): boolean {
  return now < until && until - now <= span;
}

/**
 * Fetches, checks and caches one sender's keys. One per provider instance; `get` never rejects with
 * anything but a `VerificationError` (`untrusted_key_url`, `key_unavailable`).
 * @internal
 */
export class KeyFetcher {
  readonly #label: string;
  readonly #allowed: readonly AllowedHost[];
  readonly #format: KeyFormat;
  readonly #certificates: CertificateRules | undefined;
  readonly #roots: readonly X509Certificate[] | undefined;
  readonly #issuers = new Map<string, Buffer>();
  readonly #fetch: KeyFetch;
  readonly #ttlMs: number;
  readonly #size: number;
  readonly #timeoutMs: number;
  readonly #cooldownMs: number;
  readonly #now: () => number;
  readonly #concurrency: number;
  readonly #perMinute: number;
  readonly #failureCooldownMs: number;
  /**
   * Key sets that verified a delivery: only a verified set may push another out, so a flood of
   * unauthenticated requests naming new URLs churns `#cache` alone and never evicts the real keys.
   */
  readonly #trusted = new Map<string, Entry>();
  /** Key sets fetched for a delivery not (yet) verified with them. */
  readonly #cache = new Map<string, Entry>();
  /** URLs (and so key ids) whose fetch failed, until when they are not asked again. */
  readonly #failed = new Map<string, number>();
  #inFlight = 0;
  /** Fetches that may start now (refilled evenly, `#perMinute` a minute, at most `#perMinute`). */
  #tokens: number;
  #refilledAt: number;

  constructor(
    label: string,
    spec: {
      allowedHosts: readonly AllowedHost[];
      format: KeyFormat;
      certificates?: CertificateRules | undefined;
    },
    options: FetchedKeyOptions & { now?: () => number } = {},
  ) {
    this.#label = label;
    this.#allowed = checkAllowedHosts(label, spec.allowedHosts);
    this.#format = spec.format;
    this.#certificates = spec.certificates;
    try {
      this.#roots = options.certificateRoots ? parseRoots(options.certificateRoots) : undefined;
    } catch (error) {
      throw new ConfigError(
        'invalid_option',
        `onceonly: ${label} certificateRoots must be PEM certificates (${(error as Error).message})`,
      );
    }
    const fetcher = options.fetch ?? (globalThis.fetch as unknown as KeyFetch | undefined);
    if (typeof fetcher !== 'function') {
      throw new ConfigError(
        'invalid_option',
        `onceonly: ${label} fetches its keys: pass fetch (none is global here)`,
      );
    }
    this.#fetch = fetcher;
    this.#ttlMs = parseDuration(options.keyCacheTtl ?? '1h', 'keyCacheTtl');
    this.#timeoutMs = parsePositiveDuration(options.keyTimeout ?? '3s', 'keyTimeout');
    this.#cooldownMs = parseDuration(options.keyRefetchCooldown ?? '30s', 'keyRefetchCooldown');
    this.#size = positiveInteger(options.keyCacheSize ?? 32, 'keyCacheSize');
    this.#concurrency = positiveInteger(options.keyFetchConcurrency ?? 2, 'keyFetchConcurrency');
    this.#perMinute = positiveInteger(options.keyFetchesPerMinute ?? 10, 'keyFetchesPerMinute');
    this.#failureCooldownMs = parseDuration(options.keyFailureCooldown ?? '10s', 'keyFailureCooldown');
    this.#now = options.now ?? Date.now;
    this.#tokens = this.#perMinute;
    this.#refilledAt = this.#now();
  }

  /** The URL, parsed, when it may be fetched; `untrusted_key_url` otherwise. Makes no request. */
  check(raw: string): URL {
    return checkSenderUrl(this.#label, raw, this.#allowed);
  }

  /**
   * The key set at `raw`, from the cache while fresh. `refresh` asks for a newer copy (a key id the
   * cached one does not hold); it is granted at most once per cooldown.
   */
  get(raw: string, refresh = false): Promise<KeySet> {
    let url: URL;
    try {
      url = this.check(raw);
    } catch (error) {
      return Promise.reject(error);
    }
    const id = url.href;
    const now = this.#now();
    const trusted = this.#trusted.has(id);
    const home = trusted ? this.#trusted : this.#cache;
    const cached = home.get(id);
    const fresh = cached !== undefined && ahead(now, cached.expiresAt, this.#ttlMs);
    if (fresh && !(refresh && !ahead(now, cached.fetchedAt + this.#cooldownMs, this.#cooldownMs))) {
      // Most recently used last: the first entry is the one to drop.
      touch(home, id, cached, this.#size);
      return cached.keys;
    }
    const refused = this.#refusal(id, now, trusted);
    // A refresh that may not run now keeps the cached set (its keys still answer).
    if (refused) return fresh ? cached.keys : Promise.reject(refused);
    this.#inFlight++;
    const keys = this.#load(url);
    const entry: Entry = { keys, fetchedAt: now, expiresAt: now + this.#ttlMs };
    touch(home, id, entry, this.#size);
    keys.then(
      () => {
        this.#inFlight--;
        this.#failed.delete(id);
      },
      () => {
        this.#inFlight--;
        // Remembered for the cooldown: the same missing key costs one request per cooldown. A
        // verified set whose refresh failed keeps its keys until they expire.
        touch(this.#failed, id, this.#now() + this.#failureCooldownMs, this.#size * 8);
        if (home.get(id) !== entry) return;
        if (fresh && trusted) home.set(id, cached);
        else home.delete(id);
      },
    );
    return keys;
  }

  /**
   * Why a fetch of `id` may not start now, without a request; or undefined when it may. A set that
   * verified a delivery (`trusted`) is held back only by its own failure.
   */
  #refusal(id: string, now: number, trusted: boolean): VerificationError | undefined {
    const until = this.#failed.get(id);
    if (until !== undefined) {
      if (ahead(now, until, this.#failureCooldownMs)) {
        return unavailable(
          this.#label,
          `it failed less than ${Math.ceil(this.#failureCooldownMs / 1000)} s ago (keyFailureCooldown) and is not asked for again yet`,
        );
      }
      this.#failed.delete(id);
    }
    if (trusted) return undefined;
    if (this.#inFlight >= this.#concurrency) {
      return unavailable(this.#label, `${this.#inFlight} key requests are in flight (keyFetchConcurrency)`);
    }
    // A clock set back refills nothing, rather than draining the bucket for as long as it stepped.
    const elapsed = Math.max(0, now - this.#refilledAt);
    this.#tokens = Math.min(this.#perMinute, this.#tokens + (elapsed * this.#perMinute) / 60_000);
    this.#refilledAt = now;
    if (this.#tokens < 1) {
      return unavailable(this.#label, `over ${this.#perMinute} key requests a minute (keyFetchesPerMinute)`);
    }
    this.#tokens -= 1;
    return undefined;
  }

  /**
   * Marks the key set at `raw` as one that verified a delivery: from now on only other verified
   * sets can push it out of the cache, never the sets fetched for unauthenticated requests.
   */
  trust(raw: string): void {
    let id: string;
    try {
      id = new URL(raw).href;
    } catch {
      return;
    }
    const entry = this.#cache.get(id);
    if (entry === undefined) return;
    this.#cache.delete(id);
    touch(this.#trusted, id, entry, this.#size);
  }

  /** How many URLs are cached, verified or not (for tests and metrics). */
  get size(): number {
    return this.#cache.size + this.#trusted.size;
  }

  #load(url: URL): Promise<KeySet> {
    return withinDeadline(
      (signal) => this.#exchange(url, signal),
      this.#timeoutMs,
      (why, cause) => unavailable(this.#label, why, cause),
    );
  }

  async #exchange(start: URL, signal: AbortSignal): Promise<KeySet> {
    let url = start;
    for (let hop = 0; ; hop++) {
      const response = await this.#fetch(url.href, {
        signal,
        redirect: 'manual',
        headers: {
          accept: this.#format === 'jwks' ? 'application/json' : 'application/x-pem-file, text/plain',
        },
      });
      if (response.status >= 300 && response.status < 400) {
        const location = response.headers.get('location');
        await response.body?.cancel().catch(() => {});
        let next: URL;
        try {
          next = new URL(location ?? '', url);
        } catch {
          throw unavailable(this.#label, 'a redirect without a usable Location');
        }
        // Only to the same host, over https: a redirect elsewhere is not followed.
        if (next.protocol !== 'https:' || next.host !== url.host) {
          throw untrusted(this.#label, `redirects to ${next.host || 'another place'}`);
        }
        if (hop >= MAX_REDIRECTS) throw unavailable(this.#label, 'too many redirects');
        url = next;
        continue;
      }
      if (!response.ok) {
        await response.body?.cancel().catch(() => {});
        throw unavailable(this.#label, `the key server answered ${response.status}`);
      }
      const text = await readBounded(response, signal);
      if (this.#certificates) return this.#certified(text, start, signal);
      try {
        return parseKeys(text, this.#format, this.#now());
      } catch (error) {
        throw unavailable(this.#label, `what it served is not a key (${(error as Error).message})`, error);
      }
    }
  }

  /** The key of a certificate that chains to a trusted root and is issued to the sender's name. */
  async #certified(text: string, url: URL, signal: AbortSignal): Promise<KeySet> {
    try {
      const key = await verifiedCertificateKey(text, url, this.#certificates!, {
        now: this.#now(),
        roots: this.#roots,
        fetchIssuer: (issuer) => this.#issuer(issuer, signal),
      });
      return { byId: new Map(), all: [key] };
    } catch (error) {
      if (error instanceof VerificationError) throw error;
      throw new VerificationError(
        'invalid_signature',
        `onceonly: the ${this.#label} signing certificate is not trusted: ${(error as Error).message}`,
        { cause: error },
      );
    }
  }

  /** An intermediate certificate's bytes by its URL (checked by the caller), kept once fetched. */
  async #issuer(url: string, signal: AbortSignal): Promise<Buffer> {
    const kept = this.#issuers.get(url);
    if (kept) return kept;
    const response = await this.#fetch(url, {
      signal,
      redirect: 'manual',
      headers: { accept: 'application/pkix-cert, application/x-pem-file' },
    });
    if (!response.ok || !response.body) {
      await response.body?.cancel().catch(() => {});
      throw unavailable(this.#label, `the issuer certificate's server answered ${response.status}`);
    }
    const bytes = await readBoundedBytes(response.body, signal);
    touch(this.#issuers, url, bytes, 8);
    return bytes;
  }
}
