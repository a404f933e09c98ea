/**
 * The Standard Webhooks family (standardwebhooks.com; Svix and every sender built on it: Resend,
 * Clerk, Polar, Liveblocks...): `webhook-signature: v1,<base64> [v1,<base64> ...]` over
 * `id.timestamp.body`, HMAC-SHA256 with the base64-decoded `whsec_` secret, `webhook-id` and
 * `webhook-timestamp` beside it (or the `svix-*` trio). The message id is signed and the same on
 * every retry, so dedup keys on it; the tolerance refuses late replays.
 *
 * A sender built on it is a declaration: its name (the key space), its retry window, the header
 * prefixes it sends, where its type lives.
 */

import { createSecretKey, type KeyObject } from 'node:crypto';
import type { Duration } from '../../core/duration.js';
import { ConfigError, VerificationError } from '../../errors.js';
import {
  checkTolerance,
  decodeSignature,
  decodeStrict,
  header,
  parseJsonObject,
  parseTimestamp,
  type SecretInput,
  toleranceMs,
} from '../shared.js';
import type { AuthenticatingProvider, DeliveryInput, HeaderReader, Verified } from '../types.js';
import { requireBodyHmac } from './bodyHmac.js';
import {
  assemble,
  type BaseDeclaration,
  checkName,
  type FieldPath,
  fieldAt,
  readSecrets,
  type SecretSpec,
} from './define.js';

export interface StandardWebhooksDeclaration<E> extends Omit<BaseDeclaration<E, string>, 'event'> {
  /**
   * The header prefixes the sender uses, tried in order: `['webhook', 'svix']` reads `webhook-id`,
   * then `svix-id` (Svix sends both; the first present wins).
   * @default ['webhook', 'svix']
   */
  readonly headers?: readonly string[] | undefined;
  /** Where the type is in the signed body. @default 'type' */
  readonly type?: FieldPath | undefined;
  /** @default '5m' */
  readonly tolerance?: Duration | undefined;
  /** Lets `options.name` replace the declared name (the generic `standardWebhooks` does). */
  readonly renamable?: boolean | undefined;
  /**
   * The sender's other credentials to refuse, and how its secret becomes key bytes.
   * @default decode: `whsec_` + base64 (the prefix optional), no look-alikes
   */
  readonly secret?: SecretSpec | undefined;
  /**
   * A second key the sender may sign with under the same secret, tried beside the first (each
   * secret's, while rotating): Polar signs endpoints whose secret was made since 2026-09-08 per the
   * spec, and older ones with the secret's UTF-8 bytes. `undefined` when the secret gives none.
   */
  readonly alternateKey?: ((secret: string) => Uint8Array | undefined) | undefined;
}

export interface StandardWebhooksFamilyOptions {
  secret: SecretInput;
  name?: string | undefined;
  tolerance?: Duration | undefined;
  retention?: Duration | undefined;
}

/** The options of a named sender built on Standard Webhooks (Clerk, Resend...): no `name`. */
export interface StandardWebhooksSenderOptions {
  /**
   * The endpoint's signing secret as the sender's dashboard shows it; an array while rotating.
   * @example process.env.CLERK_WEBHOOK_SECRET!
   */
  secret: SecretInput;
  /**
   * How far `webhook-timestamp` (or `svix-timestamp`) may be from `receivedAt`, both directions.
   * @default '5m'
   */
  tolerance?: Duration | undefined;
  /** How long a completed message id is remembered (the sender's retry window plus a margin). */
  retention?: Duration | undefined;
}

const PREFIX = 'whsec_';

/** The header names of one prefix, built once rather than per delivery. */
interface Names {
  readonly id: string;
  readonly timestamp: string;
  readonly signature: string;
}

/** The secret as senders show it: `whsec_` + base64 key bytes (the prefix may be left off). */
export function standardWebhooksKey(name: string): (secret: string) => Uint8Array {
  return (s) => {
    const encoded = s.startsWith(PREFIX) ? s.slice(PREFIX.length) : s;
    const key = decodeSignature(encoded, 'base64');
    if (!key || key.length === 0) {
      throw new ConfigError(
        'invalid_secret',
        `onceonly: the ${name} secret must be 'whsec_' followed by base64; copy it from the sender's dashboard`,
      );
    }
    return key;
  };
}

/** The declaration's second keys for the configured secrets (already checked by `readSecrets`). */
function alternateKeys(
  input: SecretInput,
  alternate: (secret: string) => Uint8Array | undefined,
): KeyObject[] {
  const out: KeyObject[] = [];
  for (const secret of typeof input === 'string' ? [input] : input) {
    const key = alternate(secret.trim());
    if (key !== undefined && key.length > 0) out.push(createSecretKey(key));
  }
  return out;
}

/**
 * A Standard Webhooks provider factory from its declaration.
 *
 * @example
 * const factory = standardWebhooksFamily({ name: 'clerk', retention: '4d' });
 * export const clerk = (options: ClerkOptions) => factory(options);
 */
export function standardWebhooksFamily<E>(
  d: StandardWebhooksDeclaration<E>,
): (options: StandardWebhooksFamilyOptions) => AuthenticatingProvider<E> {
  const families: readonly Names[] = (d.headers ?? ['webhook', 'svix']).map((p) => ({
    id: `${p}-id`,
    timestamp: `${p}-timestamp`,
    signature: `${p}-signature`,
  }));
  const first = families[0];
  if (first === undefined) throw new ConfigError('invalid_option', `onceonly: ${d.name} declares no headers`);
  const ids = families.map((f) => f.id).join(' (or ');
  const missingId = `onceonly: the ${ids}${')'.repeat(families.length - 1)} header is missing`;
  const typePath = d.type ?? 'type';

  return (options) => {
    const name = d.renamable ? checkName(options.name ?? d.name, 'standardWebhooks name', 'clerk') : d.name;
    const keys = readSecrets(name, options.secret, {
      ...d.secret,
      decode: d.secret?.decode ?? standardWebhooksKey(name),
    });
    const signing = d.alternateKey ? [...keys, ...alternateKeys(options.secret, d.alternateKey)] : keys;
    const tolerance = toleranceMs(options.tolerance ?? d.tolerance);

    function required(headers: HeaderReader, headerName: string): string {
      const value = header(headers, headerName);
      if (value === undefined)
        throw new VerificationError('missing_header', `onceonly: the ${headerName} header is missing`);
      return value;
    }

    /** Headers, tolerance, HMAC over `id.timestamp.body`; returns the message id (signed). */
    function authenticate({ rawBody, headers, receivedAt }: DeliveryInput): string {
      let f: Names = first!;
      let id = header(headers, f.id);
      for (let i = 1; id === undefined && i < families.length; i++) {
        f = families[i]!;
        id = header(headers, f.id);
      }
      if (id === undefined) throw new VerificationError('missing_header', missingId);
      const timestamp = required(headers, f.timestamp);
      const signatures = required(headers, f.signature);
      // Only `v1,<base64>` entries are HMAC signatures; `v1a,` (asymmetric) and unknown versions are
      // skipped. Each is decoded as it is found, without building a list of strings first.
      const candidates: Buffer[] = [];
      for (let from = 0; from <= signatures.length; ) {
        let end = signatures.indexOf(' ', from);
        if (end === -1) end = signatures.length;
        if (signatures.startsWith('v1,', from)) {
          const decoded = decodeStrict(signatures.slice(from + 3, end).trim(), 'base64');
          if (decoded) candidates.push(decoded);
        }
        from = end + 1;
      }
      if (candidates.length === 0) {
        throw new VerificationError(
          'malformed_header',
          `onceonly: the ${f.signature} v1, header holds no base64 signature`,
        );
      }
      checkTolerance(parseTimestamp(f.timestamp, timestamp), receivedAt, tolerance);
      requireBodyHmac(name, 'sha256', signing, `${id}.${timestamp}.`, rawBody, candidates);
      return id;
    }

    const describe =
      d.describe ??
      ((input: DeliveryInput, id: string): Verified<E> => {
        const event = parseJsonObject(input.rawBody);
        return { event: event as E, type: fieldAt(event, typePath), typeSigned: true, id, dedup: 'id' };
      });

    return assemble({
      name,
      retention: options.retention,
      defaultRetention: d.retention,
      identity: keys,
      keys,
      authenticate,
      describe,
      handshake: d.handshake,
      options,
    });
  };
}
