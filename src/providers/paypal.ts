import type { Duration } from '../core/duration.js';
import { ConfigError, VerificationError } from '../errors.js';
import { type AsymmetricParts, asymmetric } from './families/asymmetric.js';
import type { CertificateRules } from './families/certChain.js';
import type { FetchedKeyOptions } from './families/fetchedKeys.js';
import { asBuffer, namedIdentity, parseIsoTimestamp, requireHeader } from './shared.js';
import type { AuthenticatingProvider, DeliveryInput } from './types.js';

/** A PayPal webhook event. */
export interface PaypalEvent {
  id: string;
  event_type: string;
  resource_type?: string;
  resource: Record<string, unknown>;
  create_time?: string;
  [field: string]: unknown;
}

export interface PaypalOptions extends FetchedKeyOptions {
  /**
   * The webhook's ID (Developer Dashboard → your app → Webhooks), which PayPal signs into every
   * delivery: a delivery made for another webhook does not verify.
   * @example process.env.PAYPAL_WEBHOOK_ID!
   */
  webhookId: string;
  /**
   * How far `PAYPAL-TRANSMISSION-TIME` may be from `receivedAt`, in both directions. PayPal's SDKs
   * check none; onceonly does.
   * @default '5m'
   */
  tolerance?: Duration;
  /**
   * How long a completed event id is remembered. PayPal retries up to 25 times over 3 days; a day
   * of margin.
   * @default '4d'
   */
  retention?: Duration;
}

// PayPal serves its webhook signing certificates from its API hosts, live and sandbox.
const PAYPAL_HOSTS = [
  'api.paypal.com',
  'api-m.paypal.com',
  'api.sandbox.paypal.com',
  'api-m.sandbox.paypal.com',
];
const CERT_PATH = '/v1/notifications/certs/';
/**
 * PayPal's webhook certificates chain to a public root (PayPal serves the chain with the
 * certificate) and are issued to `messageverificationcerts.paypal.com` or its sandbox name
 * `messageverificationcerts.sandbox.paypal.com`: the names PayPal's own SDKs check (both PayPal's).
 */
const PAYPAL_SUBJECTS = [
  'messageverificationcerts.paypal.com',
  'messageverificationcerts.sandbox.paypal.com',
] as const;
const PAYPAL_CERTIFICATES: CertificateRules = {
  subjects: () => PAYPAL_SUBJECTS,
  issuerHosts: ['cacerts.digicert.com'],
};

const CRC_TABLE = (() => {
  const table = new Int32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c;
  }
  return table;
})();

/** CRC-32 (IEEE) of the bytes, as the unsigned decimal PayPal signs. */
export function crc32(bytes: Uint8Array): number {
  let crc = -1;
  for (let i = 0; i < bytes.length; i++) crc = CRC_TABLE[(crc ^ bytes[i]!) & 0xff]! ^ (crc >>> 8);
  return (crc ^ -1) >>> 0;
}

function reader(webhookId: string): (input: DeliveryInput) => AsymmetricParts {
  return (input) => {
    const { headers } = input;
    const algorithm = requireHeader(headers, 'paypal-auth-algo');
    if (algorithm !== 'SHA256withRSA') {
      // The header is unsigned: only the algorithm PayPal uses is taken, never one it names.
      throw new VerificationError(
        'malformed_header',
        'onceonly: the paypal-auth-algo header must be SHA256withRSA',
      );
    }
    const id = requireHeader(headers, 'paypal-transmission-id');
    const time = requireHeader(headers, 'paypal-transmission-time');
    const keyUrl = requireHeader(headers, 'paypal-cert-url');
    if (!URL.canParse(keyUrl) || !new URL(keyUrl).pathname.startsWith(CERT_PATH)) {
      throw new VerificationError(
        'untrusted_key_url',
        `onceonly: the paypal-cert-url is not under ${CERT_PATH}; it was not fetched`,
      );
    }
    return {
      signature: requireHeader(headers, 'paypal-transmission-sig'),
      encoding: 'base64',
      signatureName: 'paypal-transmission-sig header',
      signed: [`${id}|${time}|${webhookId}|${crc32(asBuffer(input.rawBody))}`],
      timestampMs: parseIsoTimestamp('paypal-transmission-time', time),
      keyUrl,
    };
  };
}

/**
 * PayPal: `PAYPAL-TRANSMISSION-SIG` (base64), SHA256withRSA over
 * `transmission id|transmission time|webhook id|CRC32 of the body` (unsigned decimal), checked
 * with the certificate at `PAYPAL-CERT-URL`, fetched only from PayPal's API hosts (live and
 * sandbox, under `/v1/notifications/certs/`), used only when it chains to a root of Node's store and
 * is issued to `messageverificationcerts.paypal.com` (or its sandbox name), and cached. The webhook id is yours (configured), so
 * a delivery made for another webhook does not verify. Dedup keys on the event `id` (`WH-...`, in
 * the body, the same on every retry); `on` routes by `event_type`.
 *
 * The body is covered only through its CRC-32, which can be matched by a crafted body: someone who
 * captured a delivery can send another body under its headers within the tolerance. For anything
 * that moves money, read the event or its resource back from PayPal's API before acting on it.
 *
 * @example
 * createReceiver({
 *   provider: paypal({ webhookId: process.env.PAYPAL_WEBHOOK_ID! }),
 *   store,
 *   on: { 'PAYMENT.CAPTURE.COMPLETED': ({ event }) => fulfil(event.resource) },
 * });
 */
export function paypal<E extends PaypalEvent = PaypalEvent>(
  options: PaypalOptions,
): AuthenticatingProvider<E> {
  const webhookId = typeof options.webhookId === 'string' ? options.webhookId.trim() : '';
  if (webhookId.startsWith('WH-')) {
    throw new ConfigError(
      'invalid_secret',
      "onceonly: the paypal webhookId starts with 'WH-', which is an event id; use the webhook's ID from the Developer Dashboard (Webhooks)",
    );
  }
  if (!/^[A-Z0-9]{8,40}$/.test(webhookId)) {
    throw new ConfigError(
      'invalid_secret',
      "onceonly: paypal needs webhookId, the webhook's ID from the Developer Dashboard (Webhooks), such as 1JE4291016473214C",
    );
  }
  const declaration = asymmetric<PaypalEvent>({
    name: 'paypal',
    retention: '4d',
    algorithm: 'rsa-sha256',
    read: reader(webhookId),
    fetchedKeys: { allowedHosts: PAYPAL_HOSTS, format: 'pem', certificates: PAYPAL_CERTIFICATES },
    event: { id: 'id', type: 'event_type', typeSigned: true },
  });
  // The certificates are PayPal's, the same for every endpoint: the webhook id names this one.
  const provider = declaration(options);
  return {
    ...provider,
    identity: namedIdentity('paypal', webhookId),
  } as unknown as AuthenticatingProvider<E>;
}
