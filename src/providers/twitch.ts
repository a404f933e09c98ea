import type { Duration } from '../core/duration.js';
import { VerificationError } from '../errors.js';
import { echo, plainChallenge } from './families/challenge.js';
import { timestampedHmac } from './families/timestampedHmac.js';
import { header, parseJsonObject, requireHeader, type SecretInput, stringField } from './shared.js';
import type { AuthenticatingProvider, DeliveryInput, Verified } from './types.js';

/**
 * A Twitch EventSub message: a `notification` (`subscription` and `event`) or a `revocation`
 * (`subscription` only, its `status` saying why).
 */
export interface TwitchEvent {
  subscription: { id: string; type: string; version: string; status: string; [field: string]: unknown };
  event?: Record<string, unknown>;
  [field: string]: unknown;
}

export interface TwitchOptions {
  /**
   * The secret you passed when creating the subscription (`transport.secret`, 10 to 100 ASCII
   * characters); an array while rotating.
   * @example process.env.TWITCH_EVENTSUB_SECRET!
   */
  secret: SecretInput;
  /**
   * How far `Twitch-Eventsub-Message-Timestamp` may be from `receivedAt`, in both directions. Twitch
   * asks receivers to refuse messages older than 10 minutes.
   * @default '10m'
   * @example '5m'
   */
  tolerance?: Duration;
  /**
   * How long a completed message id is remembered. Twitch resends a message it is unsure you got
   * under the same id; the tolerance refuses anything older than 10 minutes, so a day is a wide margin.
   * @default '1d'
   * @example '3d'
   */
  retention?: Duration;
}

const MESSAGE_ID = 'twitch-eventsub-message-id';
const MESSAGE_TYPE = 'twitch-eventsub-message-type';
const VERIFICATION = 'webhook_callback_verification';

/** What the signed body is, from its shape: the unsigned Message-Type header must agree. */
function kindOf(event: Record<string, unknown>): 'notification' | 'revocation' | typeof VERIFICATION {
  if (event.event !== undefined) return 'notification';
  if (event.challenge !== undefined) return VERIFICATION;
  return 'revocation';
}

function agree(input: DeliveryInput, kind: string): void {
  const said = header(input.headers, MESSAGE_TYPE);
  if (said !== undefined && said !== kind) {
    // The header is outside the signature: a signed notification resent as a revocation (or the
    // reverse) would otherwise be routed by whoever resent it.
    throw new VerificationError(
      'malformed_header',
      `onceonly: the ${MESSAGE_TYPE} header says ${JSON.stringify(said.slice(0, 40))}, but the signed body is a ${kind}`,
    );
  }
}

/** Notifications route by `subscription.type`, revocations as `revocation`; the id is the signed message id. */
function describe(input: DeliveryInput): Verified<Record<string, unknown>> {
  const event = parseJsonObject(input.rawBody);
  const kind = kindOf(event);
  agree(input, kind);
  const id = requireHeader(input.headers, MESSAGE_ID);
  const type = kind === 'notification' ? stringField(event.subscription, 'type') : kind;
  return { event, type, typeSigned: true, id, dedup: 'id' };
}

const declaration = timestampedHmac({
  name: 'twitch',
  retention: '1d',
  tolerance: '10m',
  secret: {
    lookalikes: [['oauth:', 'a chat OAuth token']],
    expected: 'the secret you set as transport.secret when creating the EventSub subscription',
    refuse: (s) =>
      s.length < 10 || s.length > 100 || !/^[\x21-\x7e]+$/.test(s)
        ? 'the twitch secret is the transport.secret of the subscription: 10 to 100 ASCII characters'
        : undefined,
  },
  signature: { header: 'twitch-eventsub-message-signature', encoding: 'hex', prefix: 'sha256=' },
  timestamp: { header: 'twitch-eventsub-message-timestamp', unit: 'rfc3339' },
  // HMAC-SHA256 over message id + timestamp (as sent) + body: the id is signed.
  signedPrefix: (t, input) => requireHeader(input.headers, MESSAGE_ID) + t,
  describe,
  // The subscription check: a signed POST whose body holds `challenge`, answered with it as text.
  handshake: (request, { authenticate }) => {
    if (request.method !== 'POST' || header(request.headers, MESSAGE_TYPE) !== VERIFICATION) return undefined;
    authenticate(request);
    const event = parseJsonObject(request.rawBody);
    agree(request, kindOf(event));
    const challenge = typeof event.challenge === 'string' ? event.challenge : undefined;
    return echo(plainChallenge(challenge, 'twitch challenge'));
  },
});

/**
 * Twitch EventSub (webhook transport): `Twitch-Eventsub-Message-Signature: sha256=<hex>` over
 * message id + timestamp + body, HMAC-SHA256 with the subscription's secret; the RFC 3339
 * timestamp (nanoseconds) is checked against a 10-minute tolerance both ways. Dedup keys on the
 * signed message id. `on` routes notifications by `subscription.type` (`stream.online`) and
 * revocations as `revocation`, read from the signed body; an unsigned Message-Type header that
 * disagrees with it is refused. `webhook_callback_verification` is answered by the receiver itself
 * (the challenge as text, outcome `handshake`) once its signature checks out.
 *
 * @example
 * createReceiver({
 *   provider: twitch({ secret: process.env.TWITCH_EVENTSUB_SECRET! }),
 *   store,
 *   on: { 'stream.online': ({ event }) => announce(event.event), revocation: ({ event }) => resubscribe(event) },
 * });
 */
export function twitch<E = TwitchEvent>(options: TwitchOptions): AuthenticatingProvider<E> {
  return declaration(options) as AuthenticatingProvider<E>;
}
