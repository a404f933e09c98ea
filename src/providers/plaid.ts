import type { Duration } from '../core/duration.js';
import { ConfigError, VerificationError } from '../errors.js';
import { asymmetric } from './families/asymmetric.js';
import { type FetchedKeyOptions, type KeyFetch, readBounded } from './families/fetchedKeys.js';
import { isTestKeys, markTestKeys } from './families/testKeys.js';
import { namedIdentity, parseJsonObject, stringField } from './shared.js';
import type { AuthenticatingProvider, DeliveryInput, Verified } from './types.js';

/** A Plaid webhook: `webhook_type` and `webhook_code` say what happened, `item_id` to whom. */
export interface PlaidEvent {
  webhook_type: string;
  webhook_code: string;
  item_id?: string;
  environment?: string;
  [field: string]: unknown;
}

/** The `fetch` Plaid's verification keys are requested with: a POST of JSON, as `fetch` does it. */
export type PlaidFetch = (
  url: string,
  init: {
    method: 'POST';
    headers: Record<string, string>;
    body: string;
    signal: AbortSignal;
    redirect: 'manual';
  },
) => Promise<{
  readonly status: number;
  readonly ok: boolean;
  readonly headers: { get(name: string): string | null };
  /** The answer's bytes: read as a stream and cut off past 64 KiB (fetch's Response has it). */
  readonly body?: ReadableStream<Uint8Array> | null | undefined;
  text(): Promise<string>;
}>;

export interface PlaidOptions extends Omit<FetchedKeyOptions, 'fetch'> {
  /**
   * Your Plaid `client_id`: the verification key of a webhook is requested with it.
   * @example process.env.PLAID_CLIENT_ID!
   */
  clientId: string;
  /**
   * Your Plaid `secret` for the environment (never a token): sent only to Plaid's own API host.
   * @example process.env.PLAID_SECRET!
   */
  secret: string;
  /** @default 'production' */
  environment?: 'production' | 'sandbox';
  /**
   * The `fetch` the keys are requested with (`POST /webhook_verification_key/get`): yours for a
   * proxy, or in tests to answer from a local server.
   * @default globalThis.fetch
   */
  fetch?: PlaidFetch | undefined;
  /**
   * How far the JWT's `iat` may be from `receivedAt`, in both directions. Plaid asks receivers to
   * refuse webhooks signed more than 5 minutes ago.
   * @default '5m'
   */
  tolerance?: Duration;
  /**
   * How long a completed delivery's digest is remembered. Plaid retries a failed webhook for up to
   * 24 hours; a day of margin.
   * @default '2d'
   */
  retention?: Duration;
}

const HOSTS = { production: 'production.plaid.com', sandbox: 'sandbox.plaid.com' } as const;
const PATH = '/webhook_verification_key/get';

/** Routes by `webhook_type.webhook_code` (`TRANSACTIONS.SYNC_UPDATES_AVAILABLE`); Plaid sends no event id. */
function describe(input: DeliveryInput): Verified<PlaidEvent> {
  const event = parseJsonObject(input.rawBody) as PlaidEvent;
  const type = stringField(event, 'webhook_type');
  const code = stringField(event, 'webhook_code');
  return {
    event,
    type: type !== undefined && code !== undefined ? `${type}.${code}` : (code ?? type),
    typeSigned: true,
    dedup: 'body',
  };
}

/**
 * Turns the family's request for `<host>/webhook_verification_key/get?key_id=<kid>` into Plaid's
 * POST with the credentials, and Plaid's `{ key }` answer into a key set. A key Plaid reports as
 * expired (`expired_at` set) is not used.
 */
function keyRequest(options: PlaidOptions, host: string): KeyFetch {
  const send = options.fetch ?? (globalThis.fetch as unknown as PlaidFetch | undefined);
  if (typeof send !== 'function') {
    throw new ConfigError(
      'invalid_option',
      'onceonly: plaid fetches its keys: pass fetch (none is global here)',
    );
  }
  const { clientId, secret } = options;
  return async (url, init) => {
    const keyId = new URL(url).searchParams.get('key_id') ?? '';
    const response = await send(`https://${host}${PATH}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ client_id: clientId, secret, key_id: keyId }),
      signal: init.signal,
      redirect: 'manual',
    });
    // Read within the same 64 KiB bound as every fetched key (not `text()` whole, which held a
    // 300 MB answer in memory before any check).
    if (!response.ok) await response.body?.cancel().catch(() => {});
    const raw = response.ok ? await readBounded(response, init.signal) : '';
    const text = async () => {
      const answer = JSON.parse(raw) as { key?: Record<string, unknown> };
      const key = answer.key;
      const usable =
        key && typeof key === 'object' && (key.expired_at === null || key.expired_at === undefined);
      return JSON.stringify({ keys: usable ? [{ ...key, kid: keyId }] : [] });
    };
    return { status: response.status, ok: response.ok, headers: response.headers, body: null, text };
  };
}

/**
 * Plaid: the `Plaid-Verification` header is a JWT (ES256 only) whose `kid` names a key fetched from
 * Plaid's `/webhook_verification_key/get` with your client id and secret (through `fetch`, only to
 * `production.plaid.com` or `sandbox.plaid.com`, cached per key id); its `iat` is checked against
 * a 5-minute tolerance both ways and its `request_body_sha256` must equal the SHA-256 of the raw
 * body. Plaid sends no event id, so dedup keys on a digest of the signed body; `on` routes by
 * `webhook_type.webhook_code` (`TRANSACTIONS.SYNC_UPDATES_AVAILABLE`).
 *
 * @example
 * createReceiver({
 *   provider: plaid({ clientId: process.env.PLAID_CLIENT_ID!, secret: process.env.PLAID_SECRET! }),
 *   store,
 *   on: { 'TRANSACTIONS.SYNC_UPDATES_AVAILABLE': ({ event }) => sync(event.item_id) },
 * });
 */
export function plaid<E extends PlaidEvent = PlaidEvent>(options: PlaidOptions): AuthenticatingProvider<E> {
  const environment = options.environment ?? 'production';
  if (!Object.hasOwn(HOSTS, environment)) {
    throw new ConfigError('invalid_option', "onceonly: plaid environment must be 'production' or 'sandbox'");
  }
  for (const [name, value] of [
    ['clientId', options.clientId],
    ['secret', options.secret],
  ] as const) {
    if (typeof value !== 'string' || !/^[A-Za-z0-9]{16,64}$/.test(value.trim())) {
      const token = typeof value === 'string' && /^(access|public|link)-/.test(value.trim());
      throw new ConfigError(
        'invalid_secret',
        token
          ? `onceonly: the plaid ${name} is a Plaid token (access-/public-/link-); use your client_id and secret from the Dashboard (Developers → Keys)`
          : `onceonly: plaid needs ${name} from the Dashboard (Developers → Keys)`,
      );
    }
  }
  const host = HOSTS[environment];
  const trimmed = { ...options, clientId: options.clientId.trim(), secret: options.secret.trim() };
  const declaration = asymmetric<PlaidEvent>({
    name: 'plaid',
    retention: '2d',
    jws: { header: 'plaid-verification', algorithms: ['ES256'], bodyHashClaim: 'request_body_sha256' },
    fetchedKeys: {
      url: (keyId) => {
        if (keyId === undefined || !/^[A-Za-z0-9_-]{1,128}$/.test(keyId)) {
          throw new VerificationError(
            'malformed_header',
            'onceonly: the plaid-verification JWT names no usable kid',
          );
        }
        return `https://${host}${PATH}?key_id=${keyId}`;
      },
      allowedHosts: [host],
      format: 'jwks',
    },
    describe,
  });
  // The keys are Plaid's, the same for every endpoint: the client id and environment name this one.
  const request = keyRequest(trimmed, host);
  // The kit's test fetch stays recognisable through the wrapper (the provider says it trusts it).
  if (isTestKeys(options.fetch)) markTestKeys(request);
  const provider = declaration({ ...trimmed, fetch: request });
  return {
    ...provider,
    identity: namedIdentity('plaid', `${environment}:${trimmed.clientId}`),
  } as unknown as AuthenticatingProvider<E>;
}
