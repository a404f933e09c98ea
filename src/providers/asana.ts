import type { Duration } from '../core/duration.js';
import { ConfigError, VerificationError } from '../errors.js';
import { bodyHmac } from './families/bodyHmac.js';
import { plainChallenge } from './families/challenge.js';
import { header, requireHeader, retentionMs, type SecretInput } from './shared.js';
import type { AuthenticatingProvider, DeliveryInput, HandshakeRequest } from './types.js';

/** An Asana webhook delivery: a batch of events (empty for the heartbeat Asana sends every 8 hours). */
export interface AsanaEvent {
  events: {
    action: string;
    resource: { gid: string; resource_type: string; [field: string]: unknown };
    created_at: string;
    [field: string]: unknown;
  }[];
  [field: string]: unknown;
}

/** Where the hook secret of a delivery is looked up: your store of secrets, by the request. */
export type AsanaSecretLookup = (
  input: DeliveryInput,
) => SecretInput | undefined | Promise<SecretInput | undefined>;

export interface AsanaOptions {
  /**
   * The hook secret Asana sent in the handshake (`X-Hook-Secret`), which signs every later
   * delivery. Either the secret itself (an array while rotating), or a function that looks it up
   * for a delivery, for example by the webhook's target URL, in the place `onHookSecret` saved it.
   * Without it, deliveries are refused (`invalid_signature`) until one is stored.
   * @example process.env.ASANA_HOOK_SECRET!
   * @example (input) => db.hookSecret(new URL(input.url!).pathname)
   */
  secret?: SecretInput | AsanaSecretLookup;
  /**
   * Called with the `X-Hook-Secret` of a handshake, before it is echoed: save it where `secret`
   * will find it. Asana's handshake is unsigned, so anyone can send one: return `false` (or throw)
   * for a handshake you are not expecting, such as one that arrives while no `POST /webhooks` of
   * yours is in flight, or whose target URL lacks the one-time token you put in it. Without this
   * option, every handshake is refused.
   * @example async (secret, request) => (await pending.take(new URL(request.url!).searchParams.get('nonce'))) && db.saveHookSecret(secret)
   */
  onHookSecret?: (
    secret: string,
    request: HandshakeRequest,
  ) => boolean | undefined | Promise<boolean | undefined>;
  /**
   * How long a completed delivery's digest is remembered. Asana retries a failed delivery with
   * exponential backoff for 24 hours (then drops the webhook); deliveries carry no id or time, so
   * this is also the window in which a replay is caught. A day of margin.
   * @default '2d'
   * @example '7d'
   */
  retention?: Duration;
}

const SIGNATURE = 'x-hook-signature';
const HOOK_SECRET = 'x-hook-secret';

const declaration = bodyHmac<AsanaEvent>({
  name: 'asana',
  retention: '2d',
  secret: {
    lookalikes: [
      ['2/', 'a personal access token'],
      ['1/', 'a personal access token'],
    ],
    expected: 'the X-Hook-Secret Asana sent in the handshake',
  },
  signature: { header: SIGNATURE, encoding: 'hex' },
  // Events carry no id: the signed body is the key. A batch has no one type.
  event: { typeSigned: true },
});

/** The handshake: `X-Hook-Secret` on a request without a signature, handed to `onHookSecret`, then echoed. */
async function handshake(
  request: HandshakeRequest,
  onHookSecret: AsanaOptions['onHookSecret'],
): Promise<{ headers: Record<string, string> } | undefined> {
  if (request.method !== 'POST') return undefined;
  const offered = header(request.headers, HOOK_SECRET);
  if (offered === undefined || header(request.headers, SIGNATURE) !== undefined) return undefined;
  const secret = plainChallenge(offered, `${HOOK_SECRET} header`);
  if (!onHookSecret || (await onHookSecret(secret, request)) === false) {
    throw new VerificationError(
      'invalid_token',
      onHookSecret
        ? 'onceonly: this asana handshake was not expected (onHookSecret refused it)'
        : 'onceonly: an asana handshake arrived, but no onHookSecret is configured to save its secret; pass asana({ onHookSecret })',
    );
  }
  return { headers: { 'x-hook-secret': secret } };
}

const MAX_CACHED = 64;

/**
 * Asana: `X-Hook-Signature: <hex>`, HMAC-SHA256 of the body under the hook secret that Asana sent
 * once, in the handshake that created the webhook (`X-Hook-Secret`, echoed back by the receiver
 * after `onHookSecret` saved it; outcome `handshake`). Deliveries carry no id, so dedup keys on a
 * digest of the signed body.
 *
 * The secret is known only after the handshake, so `secret` may be a lookup: the provider then
 * asks it on each delivery (one Asana webhook per target URL, each with its own secret, works).
 *
 * @example
 * createReceiver({
 *   provider: asana({
 *     secret: (input) => db.hookSecret(new URL(input.url!).pathname),
 *     onHookSecret: (secret, request) => expecting(request) && db.saveHookSecret(new URL(request.url!).pathname, secret),
 *   }),
 *   store,
 *   handler: ({ event }) => applyChanges(event.events),
 * });
 */
export function asana<E = AsanaEvent>(options: AsanaOptions): AuthenticatingProvider<E> {
  const { secret, onHookSecret, retention } = options;
  if (onHookSecret !== undefined && typeof onHookSecret !== 'function') {
    throw new ConfigError('invalid_option', 'onceonly: asana onHookSecret must be a function');
  }
  const answer = (request: HandshakeRequest) => handshake(request, onHookSecret);
  if (typeof secret !== 'function') {
    // A secret known up front: the body-HMAC family as it is, plus the handshake.
    const provider =
      secret === undefined ? undefined : (declaration({ secret, retention }) as AuthenticatingProvider<E>);
    if (provider) return { ...provider, handshake: answer } as AuthenticatingProvider<E>;
  }
  const lookup: AsanaSecretLookup = typeof secret === 'function' ? secret : () => undefined;
  // One verifier per distinct secret list, made once (its key imported once), a few kept.
  const verifiers = new Map<string, AuthenticatingProvider<AsanaEvent>>();
  const verifierFor = (found: SecretInput) => {
    const id = typeof found === 'string' ? found : found.join('\n');
    let verifier = verifiers.get(id);
    if (verifier === undefined) {
      verifier = declaration({ secret: found, retention });
      if (verifiers.size >= MAX_CACHED) verifiers.delete(verifiers.keys().next().value as string);
      verifiers.set(id, verifier);
    }
    return verifier;
  };
  const run = async <T>(
    input: DeliveryInput,
    step: (v: AuthenticatingProvider<AsanaEvent>) => T | Promise<T>,
  ) => {
    const found = await lookup(input);
    if (found === undefined || (Array.isArray(found) && found.length === 0)) {
      requireHeader(input.headers, SIGNATURE);
      throw new VerificationError(
        'invalid_signature',
        'onceonly: no asana hook secret is stored for this endpoint yet; the handshake (onHookSecret) saves it',
      );
    }
    return step(verifierFor(found));
  };
  const provider: AuthenticatingProvider<AsanaEvent> = {
    name: 'asana',
    retentionMs: retentionMs(retention, '2d'),
    // The secret is not known at construction: no identity (give the receiver a `name` when two
    // Asana endpoints share a store).
    identity: undefined,
    async authenticate(input) {
      await run(input, (v) => v.authenticate(input));
    },
    verify(input) {
      return run(input, (v) => v.verify(input));
    },
    handshake: answer,
  };
  return provider as unknown as AuthenticatingProvider<E>;
}
