/**
 * The shared-token family: the sender proves who it is with a secret it sends as it is, in a header
 * (`X-Gitlab-Token`), as `Authorization: Bearer <token>`, or as basic auth (`user:password`),
 * compared in constant time with each configured token.
 *
 * A token vouches for the sender, never for the body: whoever sees one delivery (a log, a proxy)
 * can send any body with it. So dedup keys on a digest of the body unless the declaration names a
 * body id, and a provider of this family should say in its docs that its events are as trustworthy
 * as the channel the token travels on (TLS to your endpoint, nothing logging headers).
 */
import { timingSafeEqual } from 'node:crypto';
import type { Duration } from '../../core/duration.js';
import { ConfigError, VerificationError } from '../../errors.js';
import { decodeStrict, header, type SecretInput } from '../shared.js';
import type { AuthenticatingProvider, DeliveryInput } from '../types.js';
import { assemble, type BaseDeclaration, describer, readSecrets, type SecretSpec } from './define.js';

/** Where the token travels. */
export type TokenSpec =
  /** A header holding the token itself, perhaps after a prefix. */
  | { readonly header: string; readonly prefix?: string | undefined }
  /** `Authorization: Bearer <token>`. */
  | { readonly bearer: true }
  /** `Authorization: Basic base64(user:password)`; the configured secret is `user:password`. */
  | { readonly basic: true };

export interface TokenDeclaration<E> extends BaseDeclaration<E, undefined> {
  readonly secret?: SecretSpec | undefined;
  readonly token: TokenSpec;
}

export interface TokenOptions {
  /** The token (or `user:password` for basic auth); an array while rotating. */
  secret: SecretInput;
  retention?: Duration | undefined;
}

/** True when `offered` equals any expected value, every one compared (no early exit). */
function anyEqual(expected: readonly Buffer[], offered: Buffer): boolean {
  let found = false;
  for (const e of expected) {
    // The length of a token is no secret worth a hash per delivery; its bytes are compared in constant time.
    if (e.length === offered.length && timingSafeEqual(e, offered)) found = true;
  }
  return found;
}

/**
 * A shared-token provider factory from its declaration.
 *
 * @example
 * const factory = token({
 *   name: 'gitlab',
 *   retention: '3d',
 *   token: { header: 'x-gitlab-token' },
 *   event: { id: { header: 'x-gitlab-event-uuid', signed: false }, type: { header: 'x-gitlab-event' }, typeSigned: false },
 * });
 */
export function token<E>(d: TokenDeclaration<E>): (options: TokenOptions) => AuthenticatingProvider<E> {
  const label = d.label ?? d.name;
  const spec = d.token;
  const name = 'header' in spec ? spec.header : 'authorization';
  const scheme = 'bearer' in spec ? 'Bearer ' : 'basic' in spec ? 'Basic ' : (spec.prefix ?? '');
  const describe = describer(d);

  return (options) => {
    const keys = readSecrets(label, options.secret, {
      ...d.secret,
      refuse: (s) => {
        if ('basic' in spec && s.indexOf(':') < 1) return `${label} takes basic auth as 'user:password'`;
        return d.secret?.refuse?.(s);
      },
    });
    const expected = keys.map((key) => key.export());

    function authenticate({ headers }: DeliveryInput): undefined {
      const value = header(headers, name);
      if (value === undefined)
        throw new VerificationError('missing_header', `onceonly: the ${name} header is missing`);
      // The scheme name is case-insensitive (RFC 9110 §11.1); the credential is not.
      if (
        value.length < scheme.length ||
        value.slice(0, scheme.length).toLowerCase() !== scheme.toLowerCase()
      ) {
        throw new VerificationError(
          'malformed_header',
          `onceonly: the ${name} header does not start with '${scheme.trim()}'`,
        );
      }
      const credential = value.slice(scheme.length).trim();
      let offered: Buffer;
      if ('basic' in spec) {
        const decoded = decodeStrict(credential, 'base64');
        if (!decoded)
          throw new VerificationError('malformed_header', `onceonly: the ${name} header is not basic auth`);
        offered = decoded;
      } else offered = Buffer.from(credential, 'utf8');
      if (!anyEqual(expected, offered)) {
        throw new VerificationError(
          'invalid_token',
          `onceonly: the ${label} ${'basic' in spec ? 'credentials' : 'token'} matched none configured; check the secret`,
        );
      }
      return undefined;
    }

    if (expected.some((e) => e.length === 0)) {
      throw new ConfigError('invalid_secret', `onceonly: ${label} needs a non-empty token`);
    }
    return assemble({
      name: d.name,
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
