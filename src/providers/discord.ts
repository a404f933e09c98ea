import { createPublicKey, type KeyObject, verify as verifySignature } from 'node:crypto';
import { ConfigError, VerificationError } from '../errors.js';
import type { Duration } from '../lease/duration.js';
import {
  asBuffer,
  checkTolerance,
  decodeSignature,
  parseJsonObject,
  parseTimestamp,
  requireHeader,
  retentionMs,
  stringField,
  toleranceMs,
} from './shared.js';
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

// DER prefix of an Ed25519 SubjectPublicKeyInfo; the raw 32-byte key follows.
const ED25519_SPKI = Buffer.from('302a300506032b6570032100', 'hex');
const INTERACTION_TYPES: Record<number, string> = {
  1: 'PING',
  2: 'APPLICATION_COMMAND',
  3: 'MESSAGE_COMPONENT',
  4: 'APPLICATION_COMMAND_AUTOCOMPLETE',
  5: 'MODAL_SUBMIT',
};

function publicKeys(input: string | readonly string[] | undefined): KeyObject[] {
  const list = typeof input === 'string' ? [input] : Array.isArray(input) ? input : [];
  if (list.length === 0) {
    throw new ConfigError(
      'invalid_secret',
      "onceonly: discord needs publicKey, the application's public key from the Developer Portal",
    );
  }
  return list.map((raw: unknown, i) => {
    const hex = typeof raw === 'string' ? raw.trim() : '';
    const bytes = decodeSignature(hex, 'hex');
    if (bytes?.length !== 32) {
      throw new ConfigError(
        'invalid_secret',
        `onceonly: discord publicKey #${i + 1} must be 64 hex characters; copy the Public Key from the Developer Portal`,
      );
    }
    return createPublicKey({ key: Buffer.concat([ED25519_SPKI, bytes]), format: 'der', type: 'spki' });
  });
}

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
  const keys = publicKeys(options.publicKey);
  const tolerance = toleranceMs(options.tolerance);
  const retention = retentionMs(options.retention, '1d');

  /** The signature checks: headers, tolerance, Ed25519 over `timestamp + body`. Shared by `authenticate` and `verify`. */
  function authenticate({ rawBody, headers, receivedAt }: DeliveryInput): void {
    const signature = decodeSignature(requireHeader(headers, 'x-signature-ed25519'), 'hex');
    if (signature?.length !== 64) {
      throw new VerificationError(
        'malformed_header',
        'onceonly: the x-signature-ed25519 header is not a 64-byte hex signature',
      );
    }
    const timestamp = requireHeader(headers, 'x-signature-timestamp');
    checkTolerance(parseTimestamp('x-signature-timestamp', timestamp), receivedAt, tolerance);
    const body = asBuffer(rawBody);
    const signed = Buffer.concat([Buffer.from(timestamp, 'utf8'), body]);
    let ok = false;
    for (const key of keys) if (verifySignature(null, signed, key, signature)) ok = true;
    if (!ok) {
      throw new VerificationError(
        'invalid_signature',
        'onceonly: the discord signature did not verify; check the public key and that the body reaches onceonly unparsed',
      );
    }
  }

  return {
    name: 'discord',
    retentionMs: retention,
    authenticate,
    verify(input: DeliveryInput): Verified<E> {
      authenticate(input);
      const event = parseJsonObject(input.rawBody);
      const id = stringField(event, 'id');
      if ('token' in event) {
        // An interaction always carries its id; without one it must not fall back to a body key.
        if (id === undefined) {
          throw new VerificationError('missing_event_id', 'onceonly: the discord interaction has no id');
        }
        const kind = typeof event.type === 'number' ? INTERACTION_TYPES[event.type] : undefined;
        return { event: event as E, type: kind ?? String(event.type), id, dedup: 'id' };
      }
      // A webhook event: type 0 is Discord's PING, type 1 wraps `event.type`.
      const type = event.type === 0 ? 'PING' : stringField(event.event, 'type');
      return { event: event as E, type, dedup: 'body' };
    },
  };
}
