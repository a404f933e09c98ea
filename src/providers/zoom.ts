import { createHmac } from 'node:crypto';
import type { Duration } from '../lease/duration.js';
import {
  checkTolerance,
  offeredSignatures,
  parseJsonObject,
  parseTimestamp,
  requireHeader,
  requireHmac,
  retentionMs,
  type SecretInput,
  secretKeys,
  stringField,
  toleranceMs,
} from './shared.js';
import type { AuthenticatingProvider, DeliveryInput, Verified } from './types.js';

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

/**
 * Zoom: `x-zm-signature: v0=<hex>` over `v0:` + `x-zm-request-timestamp` + `:` + body,
 * HMAC-SHA256 with the secret token. Zoom sends no dedicated event id, so dedup keys on a digest
 * of the signed body. Answer `endpoint.url_validation` with {@link zoomUrlValidation}.
 *
 * @example
 * createReceiver({ provider: zoom({ secret: process.env.ZOOM_WEBHOOK_SECRET_TOKEN! }), store, on: { 'meeting.started': handle } });
 */
export function zoom<E = ZoomEvent>(options: ZoomOptions): AuthenticatingProvider<E> {
  const keys = secretKeys('zoom', options.secret);
  const tolerance = toleranceMs(options.tolerance);
  const retention = retentionMs(options.retention, '1d');

  /** The signature checks: headers, tolerance, HMAC over `v0:ts:body`. Shared by `authenticate` and `verify`. */
  function authenticate({ rawBody, headers, receivedAt }: DeliveryInput): void {
    const candidates = offeredSignatures(
      'x-zm-signature',
      [requireHeader(headers, 'x-zm-signature')],
      'hex',
      'v0=',
    );
    const timestamp = requireHeader(headers, 'x-zm-request-timestamp');
    checkTolerance(parseTimestamp('x-zm-request-timestamp', timestamp), receivedAt, tolerance);
    requireHmac('zoom', 'sha256', keys, `v0:${timestamp}:`, rawBody, candidates);
  }

  return {
    name: 'zoom',
    retentionMs: retention,
    authenticate,
    verify(input: DeliveryInput): Verified<E> {
      authenticate(input);
      const event = parseJsonObject(input.rawBody);
      return { event: event as E, type: stringField(event, 'event'), dedup: 'body' };
    },
  };
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
