/**
 * The test kit: signed deliveries as each sender really sends them, for unit tests and the CLI.
 *
 * ```ts
 * import { signedDelivery } from 'onceonly/testing';
 * const delivery = signedDelivery('stripe', { secret: 'whsec_test', type: 'invoice.paid' });
 * const response = await app.request(delivery.request()); // Hono; or fetch(url, delivery.init())
 * ```
 */
import { randomBytes } from 'node:crypto';
import type * as factories from '../../providers/index.js';
import type { SenderName } from './names.js';
import { senderRows } from './senders/index.js';
import type {
  HandshakeRequest,
  KeyTrust,
  SenderRow,
  SignedDelivery,
  SignedDeliveryOptions,
  TestKeys,
  TrustOf,
} from './types.js';

export { SENDER_NAMES, type SenderName } from './names.js';
export type {
  HandshakeRequest,
  KeyTrust,
  SignedDelivery,
  SignedDeliveryOptions,
  TestKeyFetch,
  TestKeys,
  TrustOf,
} from './types.js';

/**
 * The options `provider`'s factory in `onceonly/providers` takes (`StripeOptions` for `'stripe'`):
 * what `providerOptions` returns, so `stripe(providerOptions('stripe', { secret }))` type-checks.
 */
export type ProviderOptionsOf<P extends SenderName> = P extends keyof typeof factories
  ? (typeof factories)[P] extends (options: infer O, ...rest: never[]) => unknown
    ? O
    : never
  : never;

const byName = new Map<string, SenderRow>(senderRows.map((row) => [row.name, row]));

/** Every sender the kit signs for, with the event types it has samples of (the first is the default). */
export const senders: readonly {
  /** A name `signedDelivery` takes as it is: `senders.map((s) => signedDelivery(s.name, ...))`. */
  readonly name: SenderName;
  readonly credential: 'secret' | 'keys';
  readonly types: readonly string[];
  /** Whether the credential covers the body (false: a shared token in a header). */
  readonly signsBody: boolean;
  readonly handshake: boolean;
}[] = senderRows.map((row) => ({
  name: row.name,
  credential: row.credential,
  types: Object.keys(row.samples),
  signsBody: row.signsBody !== false,
  handshake: row.handshake !== undefined,
}));

function rowOf(provider: string): SenderRow {
  const row = byName.get(provider);
  if (!row) {
    throw new TypeError(
      `onceonly/testing: no sender ${JSON.stringify(provider)}; one of ${[...byName.keys()].join(', ')}`,
    );
  }
  return row;
}

// ignoreBOM: a leading byte-order mark stays in the text (as U+FEFF), so `text` is the body's
// bytes exactly wherever they are UTF-8.
const textOf = (bytes: Uint8Array): string => new TextDecoder('utf-8', { ignoreBOM: true }).decode(bytes);
const bytesOf = (body: string | Uint8Array): Uint8Array =>
  typeof body === 'string' ? new TextEncoder().encode(body) : new Uint8Array(body);

function credentialOf(row: SenderRow, options: SignedDeliveryOptions): { secret: string; keys?: TestKeys } {
  if (row.credential === 'keys') {
    if (!options.keys) {
      throw new TypeError(
        `onceonly/testing: ${row.name} signs with its own private key: pass keys: testKeys('${row.name}') (and build the provider with ...keys.trust)`,
      );
    }
    if (options.keys.provider !== row.name) {
      throw new TypeError(
        `onceonly/testing: these test keys are ${options.keys.provider}'s, not ${row.name}'s`,
      );
    }
    return { secret: '', keys: options.keys };
  }
  if (typeof options.secret !== 'string' || options.secret === '') {
    throw new TypeError(
      `onceonly/testing: ${row.name} signs with a shared secret: pass secret (the value your provider is configured with)`,
    );
  }
  return { secret: options.secret };
}

/**
 * A delivery signed as `provider` signs it: method, URL, headers and the raw body, as a web
 * `Request` (`request()`) and as plain parts. Give `secret` (or `keys` for the senders that sign
 * with their own key), and optionally the `payload`, event `id`, `type` and signing time `at`.
 */
export function signedDelivery(provider: SenderName, options: SignedDeliveryOptions = {}): SignedDelivery {
  const row = rowOf(provider);
  const { secret, keys } = credentialOf(row, options);
  const at = options.at ?? new Date();
  const types = Object.keys(row.samples);
  const type = options.type ?? types[0]!;
  const id = options.id ?? row.newId();
  const seconds = Math.floor(at.getTime() / 1000);
  let body: Uint8Array;
  const payload = options.payload;
  if (payload === undefined) {
    const sample = row.samples[type];
    if (!sample) {
      throw new TypeError(
        `onceonly/testing: no sample ${row.name} event of type ${JSON.stringify(type)}; give a payload, or one of ${types.join(', ')}`,
      );
    }
    const made = sample({ id, type, at, seconds, iso: at.toISOString() });
    body = bytesOf(typeof made === 'string' ? made : (row.encode ?? JSON.stringify)(made));
  } else if (typeof payload === 'string' || payload instanceof Uint8Array) {
    body = bytesOf(payload);
  } else {
    body = bytesOf((row.encode ?? JSON.stringify)(payload as Record<string, unknown>));
  }
  const url = options.url ?? `http://localhost:3000/webhooks/${row.name}`;
  const signed = row.sign({
    body,
    text: textOf(body),
    secret,
    keys,
    at,
    seconds: String(seconds),
    url,
    id,
    type,
  });
  const finalBody = signed.body === undefined ? body : bytesOf(signed.body);
  const headers: Record<string, string> = {
    'content-type': row.contentType ?? 'application/json',
    ...lowerCased(row.name, signed.headers),
  };
  const to = signed.url ?? url;
  // A sample carries the id where the provider reads it. A payload of the caller's carries it only
  // where the sender put it beside the body (its id header): else the delivery has no id to report.
  const carried = payload === undefined || carries(id, textOf(finalBody), headers, to);
  return delivery(row.name, to, headers, finalBody, carried ? id : undefined, type);
}

/** Whether the delivery holds `id`: in a header, the URL or the body (as is, JSON- or URL-encoded). */
function carries(id: string, text: string, headers: Record<string, string>, url: string): boolean {
  const forms = [id, JSON.stringify(id).slice(1, -1), encodeURIComponent(id)];
  const places = [text, url, ...Object.values(headers)];
  return forms.some((form) => places.some((place) => place.includes(form)));
}

/**
 * The headers with lower-case names. A value HTTP cannot carry (a line break, a NUL, a character
 * past U+00FF: from a secret or id given with one) is refused here, naming the header but never
 * its value: the web `Headers` would refuse it later with the value (perhaps the secret) in the
 * message.
 */
function lowerCased(provider: string, headers: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    // biome-ignore lint/suspicious/noControlCharactersInRegex: these are what HTTP refuses
    if (/[\r\n\0]|[^\u0000-\u00ff]/.test(value)) {
      throw new TypeError(
        `onceonly/testing: the ${provider} delivery's ${name} header would hold a line break, a NUL or a character past U+00FF, which HTTP cannot carry: check the secret or id given`,
      );
    }
    out[name.toLowerCase()] = value;
  }
  return out;
}

function delivery(
  provider: string,
  url: string,
  headers: Record<string, string>,
  body: Uint8Array,
  id: string | undefined,
  type: string,
): SignedDelivery {
  const frozen = Object.freeze({ ...headers });
  return Object.freeze({
    provider,
    method: 'POST' as const,
    url,
    headers: frozen,
    body,
    text: textOf(body),
    id,
    type,
    request: (to?: string) =>
      new Request(to ?? url, { method: 'POST', headers: { ...frozen }, body: new Uint8Array(body) }),
    init: () => ({ method: 'POST' as const, headers: { ...frozen }, body: new Uint8Array(body).buffer }),
  });
}

/**
 * The verification handshake `provider` makes (Slack's and Zoom's URL checks, Twitch's, Meta's and
 * Dropbox's challenges, Asana's and Okta's), signed where the sender signs it.
 */
export function handshakeRequest(
  provider: SenderName,
  options: { secret?: string; keys?: TestKeys; challenge?: string; at?: Date; url?: string } = {},
): HandshakeRequest {
  const row = rowOf(provider);
  if (!row.handshake) {
    const have = senderRows.filter((r) => r.handshake).map((r) => r.name);
    throw new TypeError(`onceonly/testing: ${row.name} makes no handshake; these do: ${have.join(', ')}`);
  }
  if (row.handshakeNeedsSecret && !options.secret) {
    throw new TypeError(
      `onceonly/testing: ${row.name}'s handshake is made with its secret: pass secret (the value your provider is configured with)`,
    );
  }
  const at = options.at ?? new Date();
  const challenge = options.challenge ?? randomBytes(16).toString('hex');
  const base = options.url ?? `http://localhost:3000/webhooks/${row.name}`;
  const parts = row.handshake({
    secret: options.secret ?? '',
    keys: row.credential === 'keys' ? credentialOf(row, options).keys : undefined,
    at,
    seconds: String(Math.floor(at.getTime() / 1000)),
    url: base,
    challenge,
  });
  const url = parts.url ?? base;
  const body = bytesOf(parts.body ?? '');
  const headers = Object.freeze(lowerCased(row.name, parts.headers));
  return Object.freeze({
    provider: row.name,
    method: parts.method,
    url,
    headers,
    body,
    text: textOf(body),
    challenge: parts.challenge,
    request: (to?: string) =>
      new Request(to ?? url, {
        method: parts.method,
        headers: { ...headers },
        ...(parts.method === 'POST' ? { body: new Uint8Array(body) } : {}),
      }),
  });
}

/**
 * A fresh secret in the form `provider`'s dashboard shows it (`whsec_...` for Stripe), for tests
 * and `onceonly sign`. Senders that sign with their own key have none: use `testKeys`.
 */
export function testSecret(provider: SenderName): string {
  const row = rowOf(provider);
  if (!row.newSecret) {
    throw new TypeError(
      `onceonly/testing: ${row.name} signs with its own private key: use testKeys('${row.name}')`,
    );
  }
  return row.newSecret();
}

/**
 * The options `provider`'s factory in `onceonly/providers` takes to accept the kit's deliveries
 * signed with this credential and sent to `url` (most take `{ secret }`; Square its notification
 * URL too, the key-signed senders `...keys.trust`).
 */
export function providerOptions<P extends SenderName>(
  provider: P,
  credential: { secret?: string; keys?: TestKeys; url?: string },
): ProviderOptionsOf<P> {
  const row = rowOf(provider);
  const url = credential.url ?? `http://localhost:3000/webhooks/${row.name}`;
  const secret = credential.secret ?? '';
  return (
    row.providerOptions
      ? row.providerOptions({ secret, keys: credential.keys, url })
      : row.credential === 'keys'
        ? { ...credential.keys?.trust }
        : { secret }
  ) as ProviderOptionsOf<P>;
}

/**
 * A local key pair for a sender that signs with its own private key (`discord`, `sendgrid`,
 * `awsSns`, `paypal`, `plaid`: the names of {@link KeyTrust}; any other name does not type-check),
 * and `trust`: what its provider is built with to accept the kit's deliveries
 * (`discord({ ...keys.trust })`). In tests only: a provider built with it says so.
 */
export function testKeys<P extends keyof KeyTrust>(provider: P): TestKeys<TrustOf<P>> {
  // Checked again at run time: a JavaScript caller, or a name cast to one of these, still gets a
  // clear error for a sender that signs with a shared secret.
  const row = rowOf(provider);
  if (!row.testKeys) {
    throw new TypeError(`onceonly/testing: ${row.name} signs with a shared secret, not keys: pass secret`);
  }
  return row.testKeys() as TestKeys<TrustOf<P>>;
}
