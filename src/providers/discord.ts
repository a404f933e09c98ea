import type { Duration } from '../core/duration.js';
import { VerificationError } from '../errors.js';
import { asymmetric } from './families/asymmetric.js';
import { parseJsonObject, stringField } from './shared.js';
import type { AuthenticatingProvider, DeliveryInput, Verified } from './types.js';

/** A Discord interaction (`id`, numeric `type`, `token`...) or webhook event (`type`, `event`). */
export type DiscordEvent = Record<string, unknown>;

export interface DiscordOptions {
  /**
   * The application's public key (Developer Portal → General Information), 64 hex characters; an
   * array while rotating. It is a public key: there is no secret to keep.
   * @example process.env.DISCORD_PUBLIC_KEY!
   */
  publicKey: string | readonly string[];
  /**
   * How far `X-Signature-Timestamp` may be from `receivedAt`, in both directions. Discord's
   * libraries check none; onceonly does.
   * @default '5m'
   * @example '1m'
   */
  tolerance?: Duration;
  /**
   * How long a completed interaction or event is remembered. Discord does not retry interactions
   * (they must be answered within 3 seconds); a day covers replays inside the tolerance and any
   * webhook-event retries with a wide margin.
   * @default '1d'
   * @example '3d'
   */
  retention?: Duration;
}

const INTERACTION_TYPES: Record<number, string> = {
  1: 'PING',
  2: 'APPLICATION_COMMAND',
  3: 'MESSAGE_COMPONENT',
  4: 'APPLICATION_COMMAND_AUTOCOMPLETE',
  5: 'MODAL_SUBMIT',
};

/**
 * Interactions key on their signed `id` and are named by their type; webhook events (no id) key on a
 * digest of the signed body.
 */
function describe(input: DeliveryInput): Verified<Record<string, unknown>> {
  const event = parseJsonObject(input.rawBody);
  const id = stringField(event, 'id');
  if ('token' in event) {
    // An interaction always carries its id; without one it must not fall back to a body key.
    if (id === undefined) {
      throw new VerificationError('missing_event_id', 'onceonly: the discord interaction has no id');
    }
    const kind = typeof event.type === 'number' ? INTERACTION_TYPES[event.type] : undefined;
    return { event, type: kind ?? String(event.type), typeSigned: true, id, dedup: 'id' };
  }
  // A webhook event: type 0 is Discord's PING, type 1 wraps `event.type`.
  const type = event.type === 0 ? 'PING' : stringField(event.event, 'type');
  return { event, type, typeSigned: true, dedup: 'body' };
}

const declaration = asymmetric({
  name: 'discord',
  retention: '1d',
  algorithm: 'ed25519',
  publicKey: {
    format: 'ed25519-hex',
    expected: "the application's Public Key from the Developer Portal (64 hex characters)",
  },
  signature: { header: 'x-signature-ed25519', encoding: 'hex', length: 64 },
  timestamp: { header: 'x-signature-timestamp' },
  // Signed: timestamp + body (the family's default).
  describe,
});

/**
 * Discord interactions and webhook events: `X-Signature-Ed25519: <hex>` over
 * `X-Signature-Timestamp` + body, Ed25519 with the application's public key. Interactions key on
 * their signed `id`; webhook events, which carry none, key on a digest of the signed body. The type
 * is the interaction type's name (`PING`, `APPLICATION_COMMAND`...) or the webhook event's `type`.
 * Answer `PING` with `{ type: 1 }`.
 *
 * @example
 * createReceiver({ provider: discord({ publicKey: process.env.DISCORD_PUBLIC_KEY! }), store, on: { PING: () => Response.json({ type: 1 }) } });
 */
export function discord<E = DiscordEvent>(options: DiscordOptions): AuthenticatingProvider<E> {
  return declaration(options) as AuthenticatingProvider<E>;
}
