import type { Duration } from '../core/duration.js';
import { ConfigError, VerificationError } from '../errors.js';
import { timestampedHmac } from './families/timestampedHmac.js';
import { parseJson, type SecretInput } from './shared.js';
import type { AuthenticatingProvider, BatchItem, DeliveryInput, Verified } from './types.js';

/** One HubSpot webhook event; a delivery carries an array of up to 100. */
export interface HubspotEvent {
  eventId: number;
  subscriptionId?: number;
  portalId?: number;
  appId?: number;
  occurredAt?: number;
  subscriptionType: string;
  attemptNumber?: number;
  objectId?: number;
  [field: string]: unknown;
}

export interface HubspotOptions {
  /**
   * The app's client secret (Development → your app → Auth); an array while rotating.
   * @example process.env.HUBSPOT_CLIENT_SECRET!
   */
  secret: SecretInput;
  /**
   * The target URL exactly as set in the app's webhook settings. HubSpot signs it; behind a proxy
   * the URL your server sees differs, so set it. Without it, the delivery's `url` is used.
   * @example 'https://example.com/webhooks/hubspot'
   */
  url?: string;
  /**
   * How far `X-HubSpot-Request-Timestamp` may be from `receivedAt`, both directions. HubSpot says to
   * refuse requests older than 5 minutes.
   * @default '5m'
   */
  tolerance?: Duration;
  /**
   * How long a completed event id is remembered. HubSpot retries up to 10 times over 24 hours;
   * 2 days leaves a margin.
   * @default '2d'
   */
  retention?: Duration;
}

// HubSpot decodes these (and only these) percent-escapes in the URI before signing it.
const DECODED: Record<string, string> = {
  '%3A': ':',
  '%2F': '/',
  '%3F': '?',
  '%40': '@',
  '%21': '!',
  '%24': '$',
  '%27': "'",
  '%28': '(',
  '%29': ')',
  '%2A': '*',
  '%2C': ',',
  '%3B': ';',
};

/** The URI as HubSpot signs it: the listed percent-escapes decoded, the rest left as sent. */
export function hubspotUri(url: string): string {
  return url.replace(/%(?:3[ABF]|2[14789ACF]|40)/gi, (code) => DECODED[code.toUpperCase()] ?? code);
}

/** Each event keyed on its own signed `eventId` and routed by `subscriptionType`. */
function describe(input: DeliveryInput): Verified<HubspotEvent> {
  const events = parseJson(input.rawBody);
  if (!Array.isArray(events) || events.length === 0) {
    throw new VerificationError('invalid_body', 'onceonly: the hubspot body must be a JSON array of events');
  }
  const batch: BatchItem<HubspotEvent>[] = [];
  for (const e of events) {
    const id = (e as { eventId?: unknown } | null)?.eventId;
    if ((typeof id !== 'number' || !Number.isSafeInteger(id)) && (typeof id !== 'string' || id === '')) {
      throw new VerificationError(
        'missing_event_id',
        'onceonly: a hubspot event has no eventId; HubSpot always sends one, so this delivery is refused',
      );
    }
    const type = (e as { subscriptionType?: unknown }).subscriptionType;
    batch.push({
      id: String(id),
      type: typeof type === 'string' ? type : undefined,
      event: e as HubspotEvent,
    });
  }
  const first = batch[0]!;
  return { event: first.event, id: first.id, type: first.type, typeSigned: true, dedup: 'id', batch };
}

function declaration(configuredUrl: string | undefined) {
  return timestampedHmac<HubspotEvent>({
    name: 'hubspot',
    retention: '2d',
    secret: {
      lookalikes: [['pat-', 'a private app access token']],
      expected: "the app's client secret (your app → Auth)",
    },
    signature: { header: 'x-hubspot-signature-v3', encoding: 'base64' },
    timestamp: { header: 'x-hubspot-request-timestamp', unit: 'ms' },
    // v3 signs method + URI + body + timestamp; webhooks are always POSTed.
    signed: ({ body, timestamp, url }) => {
      const target = configuredUrl ?? url;
      if (target === undefined) {
        throw new ConfigError(
          'invalid_option',
          'onceonly: hubspot signs the target URL; set url, or pass url to receive()',
        );
      }
      return ['POST', hubspotUri(target), body, timestamp ?? ''];
    },
    describe,
  });
}

/**
 * HubSpot (signature v3): `X-HubSpot-Signature-v3: <base64>`, HMAC-SHA256 with the app's client
 * secret over `POST` + the target URI + body + `X-HubSpot-Request-Timestamp` (ms, checked against
 * the tolerance). The body is an array of events, each keyed on its own `eventId` and routed by its
 * `subscriptionType` (`contact.creation`...), so a batch that comes back re-runs only what did not
 * complete.
 *
 * @example
 * createReceiver({ provider: hubspot({ secret: process.env.HUBSPOT_CLIENT_SECRET!, url: 'https://example.com/webhooks/hubspot' }), store, on: { 'contact.creation': sync } });
 */
export function hubspot<E extends HubspotEvent = HubspotEvent>(
  options: HubspotOptions,
): AuthenticatingProvider<E> {
  const { url } = options;
  if (url !== undefined && (typeof url !== 'string' || !/^https?:\/\//.test(url))) {
    throw new ConfigError(
      'invalid_option',
      'onceonly: hubspot url must be the full http(s) target URL set in the app',
    );
  }
  return declaration(url)(options) as unknown as AuthenticatingProvider<E>;
}
