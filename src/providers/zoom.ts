import { createHmac } from 'node:crypto';
import type { Duration } from '../core/duration.js';
import { VerificationError } from '../errors.js';
import { hmacMatches, signatureReader } from './families/bodyHmac.js';
import { bodyIncludes, fieldAt } from './families/define.js';
import { timestampedHmac } from './families/timestampedHmac.js';
import { parseJsonObject, requireHeader, type SecretInput, stringField } from './shared.js';
import type { AuthenticatingProvider } from './types.js';

/** A Zoom webhook: `event` (its type), `event_ts`, `payload`. */
export interface ZoomEvent {
  event: string;
  event_ts?: number;
  payload: Record<string, unknown>;
  [field: string]: unknown;
}

export interface ZoomOptions {
  /**
   * The app's secret token (Features → Access → Secret Token); an array while rotating.
   * @example process.env.ZOOM_WEBHOOK_SECRET_TOKEN!
   */
  secret: SecretInput;
  /**
   * How far `x-zm-request-timestamp` may be from `receivedAt`, in both directions. Zoom's own
   * samples check nothing; onceonly does.
   * @default '5m'
   * @example '2m'
   */
  tolerance?: Duration;
  /**
   * How long a completed delivery's digest is remembered. Zoom retries 3 times over about
   * 85 minutes; a day leaves a wide margin.
   * @default '1d'
   * @example '3d'
   */
  retention?: Duration;
}

const readSignature = signatureReader({ header: 'x-zm-signature', encoding: 'hex', prefix: 'v0=' });

const declaration = timestampedHmac({
  name: 'zoom',
  retention: '1d',
  signature: { header: 'x-zm-signature', encoding: 'hex', prefix: 'v0=' },
  timestamp: { header: 'x-zm-request-timestamp' },
  signedPrefix: (t) => `v0:${t}:`,
  event: { type: 'event', typeSigned: true },
  // Endpoint URL validation: a signed POST `{ event: 'endpoint.url_validation', payload: { plainToken } }`,
  // answered with the plain token and its HMAC-SHA256 (hex) under the secret token. Answered only
  // once the request's own signature checks out: an unsigned request would make the endpoint an
  // oracle for HMACs of strings of the caller's choosing, such as a forged delivery's signed content.
  handshake: (request, { authenticate, keys }) => {
    if (request.method !== 'POST' || !bodyIncludes(request.rawBody, 'endpoint.url_validation'))
      return undefined;
    authenticate(request);
    const event = parseJsonObject(request.rawBody);
    if (stringField(event, 'event') !== 'endpoint.url_validation') return undefined;
    const plainToken = fieldAt(event, ['payload', 'plainToken']);
    if (plainToken === undefined) {
      throw new VerificationError(
        'invalid_body',
        'onceonly: the zoom endpoint.url_validation has no payload.plainToken',
      );
    }
    // While rotating, answer under the secret that signed this request (Zoom validates with its current one).
    const offered = readSignature(request.headers);
    const t = requireHeader(request.headers, 'x-zm-request-timestamp');
    const key =
      keys.find((k) => hmacMatches('sha256', [k], [`v0:${t}:`, request.rawBody], offered)) ?? keys[0]!;
    const encryptedToken = createHmac('sha256', key).update(plainToken).digest('hex');
    return { body: { plainToken, encryptedToken } };
  },
});

/**
 * Zoom: `x-zm-signature: v0=<hex>` over `v0:` + `x-zm-request-timestamp` + `:` + body,
 * HMAC-SHA256 with the secret token. Zoom sends no dedicated event id, so dedup keys on a digest
 * of the signed body. `endpoint.url_validation` is answered by the receiver itself (outcome
 * `handshake`) once its signature checks out; {@link zoomUrlValidation} computes the same answer
 * for code that verifies on its own.
 *
 * @example
 * createReceiver({ provider: zoom({ secret: process.env.ZOOM_WEBHOOK_SECRET_TOKEN! }), store, on: { 'meeting.started': handle } });
 */
export function zoom<E = ZoomEvent>(options: ZoomOptions): AuthenticatingProvider<E> {
  return declaration(options) as AuthenticatingProvider<E>;
}

/**
 * The response body Zoom expects to an `endpoint.url_validation` event: the `plainToken` and its
 * HMAC-SHA256 (hex) under the secret token.
 *
 * @example
 * on: { 'endpoint.url_validation': ({ event }) => Response.json(zoomUrlValidation(event, secret)) }
 */
export function zoomUrlValidation(
  event: { payload?: { plainToken?: unknown } } | Record<string, unknown>,
  secret: string,
): { plainToken: string; encryptedToken: string } {
  const plainToken = stringField((event as { payload?: unknown }).payload, 'plainToken') ?? '';
  const encryptedToken = createHmac('sha256', secret.trim()).update(plainToken).digest('hex');
  return { plainToken, encryptedToken };
}
