import type { Duration } from '../core/duration.js';
import { parsePositiveDuration } from '../core/duration.js';
import { ConfigError, VerificationError } from '../errors.js';
import { type AsymmetricParts, asymmetric } from './families/asymmetric.js';
import type { CertificateRules } from './families/certChain.js';
import { bodyIncludes } from './families/define.js';
import {
  checkSenderUrl,
  type FetchedKeyOptions,
  type KeyFetch,
  withinDeadline,
} from './families/fetchedKeys.js';
import { header, namedIdentity, parseJsonObject } from './shared.js';
import type { AuthenticatingProvider, DeliveryInput, HandshakeRequest } from './types.js';

/** An AWS SNS message as posted to an HTTP/S subscription (raw message delivery off). */
export interface AwsSnsEvent {
  Type: 'Notification' | 'SubscriptionConfirmation' | 'UnsubscribeConfirmation';
  MessageId: string;
  TopicArn: string;
  Subject?: string;
  Message: string;
  Timestamp: string;
  SignatureVersion: '1' | '2';
  Signature: string;
  SigningCertURL: string;
  UnsubscribeURL?: string;
  MessageAttributes?: Record<string, { Type: string; Value: string }>;
  [field: string]: unknown;
}

export interface AwsSnsOptions extends FetchedKeyOptions {
  /**
   * The topics this endpoint accepts (`arn:aws:sns:<region>:<account>:<topic>`). A message of any
   * other topic is refused before its certificate is fetched, and its subscription is never
   * confirmed: AWS signs every topic's messages with the same certificates, so without this, anyone
   * could subscribe your endpoint to a topic of their own and publish to it.
   * @example process.env.SNS_TOPIC_ARN!
   */
  topicArn: string | readonly string[];
  /**
   * Whether a `SubscriptionConfirmation` of an accepted topic is confirmed by the receiver itself
   * (a GET of its `SubscribeURL`, checked to be on SNS's own host first). Turn off to confirm by
   * hand: the confirmation is then an ordinary delivery (`on: { SubscriptionConfirmation }`).
   * @default true
   */
  confirmSubscriptions?: boolean;
  /**
   * How far a message's `Timestamp` may be from `receivedAt`, in both directions. SNS keeps a
   * message's Timestamp on every retry, and retries an HTTP/S endpoint for up to an hour.
   * @default '65m'
   */
  tolerance?: Duration;
  /**
   * How long a completed `MessageId` is remembered. The tolerance already refuses anything older
   * than about an hour; a day is a wide margin.
   * @default '1d'
   */
  retention?: Duration;
}

// SNS's own regional endpoints serve the certificates and confirm subscriptions: commercial and
// GovCloud (sns.us-east-1.amazonaws.com, sns.us-gov-west-1.amazonaws.com) and China
// (sns.cn-north-1.amazonaws.com.cn). A region is two letters, a direction and a number, so S3's
// virtual-hosted names for a bucket called `sns` (sns.s3.amazonaws.com, sns.s3-us-west-2...,
// sns.s3-accelerate...) are not SNS: anyone can serve a certificate there.
const SNS_HOSTS = [
  /^sns\.[a-z]{2}(-gov)?-[a-z]+-\d{1,2}\.amazonaws\.com$/,
  /^sns\.cn-[a-z]+-\d{1,2}\.amazonaws\.com\.cn$/,
];
/** The path SNS serves its certificates under: `/SimpleNotificationService-<hex>.pem`. */
const CERT_PATH = /^\/SimpleNotificationService-[0-9a-f]{16,64}\.pem$/;
/**
 * The certificate must chain to a public root and be issued to SNS, under the names the AWS SDK
 * for Java v2 expects by region (its SNS message manager's signing-certificate common name):
 * `sns.amazonaws.com`, `sns-signing.<region>.amazonaws.com` in the regions opened since 2019,
 * `sns-us-gov-west-1.amazonaws.com` for both GovCloud regions, `sns-<region>.amazonaws.com.cn` in
 * China; and the regional host it was served from (a name only AWS can hold a certificate for).
 * SNS serves the certificate alone; its intermediate comes from the certificate's own "CA
 * Issuers" URL at Amazon Trust Services (or DigiCert), checked by its signature.
 */
function snsCertificateNames(url: URL): string[] {
  const region = url.hostname.split('.')[1] ?? '';
  if (url.hostname.endsWith('.com.cn')) {
    return [`sns-${region}.amazonaws.com.cn`, 'sns.amazonaws.com.cn', 'sns.amazonaws.com', url.hostname];
  }
  const names = ['sns.amazonaws.com', `sns-signing.${region}.amazonaws.com`, url.hostname];
  if (region.startsWith('us-gov-')) names.push('sns-us-gov-west-1.amazonaws.com');
  return names;
}
const SNS_CERTIFICATES: CertificateRules = {
  subjects: snsCertificateNames,
  issuerHosts: ['*.amazontrust.com', 'cacerts.digicert.com'],
};

/** The fields each message type signs, in this order (`Key\nValue\n` each, absent ones skipped). */
const SIGNED: Record<AwsSnsEvent['Type'], readonly string[]> = {
  Notification: ['Message', 'MessageId', 'Subject', 'Timestamp', 'TopicArn', 'Type'],
  SubscriptionConfirmation: [
    'Message',
    'MessageId',
    'SubscribeURL',
    'Timestamp',
    'Token',
    'TopicArn',
    'Type',
  ],
  UnsubscribeConfirmation: ['Message', 'MessageId', 'SubscribeURL', 'Timestamp', 'Token', 'TopicArn', 'Type'],
};

const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$/;

function invalid(why: string): VerificationError {
  return new VerificationError('invalid_body', `onceonly: the aws-sns message ${why}`);
}

/** Reads the message's parts, refusing a topic this endpoint does not accept before any fetch. */
function reader(topics: ReadonlySet<string>): (input: DeliveryInput) => AsymmetricParts {
  return (input) => {
    const m = parseJsonObject(input.rawBody);
    const type = m.Type;
    if (typeof type !== 'string' || !Object.hasOwn(SIGNED, type)) throw invalid('has no known Type');
    // The header is outside the signature: it must agree with the signed Type.
    const said = header(input.headers, 'x-amz-sns-message-type');
    if (said !== undefined && said !== type) {
      throw new VerificationError(
        'malformed_header',
        `onceonly: the x-amz-sns-message-type header says ${JSON.stringify(said.slice(0, 40))}, but the signed message is a ${type}`,
      );
    }
    if (typeof m.TopicArn !== 'string' || !topics.has(m.TopicArn)) {
      throw new VerificationError(
        'invalid_signature',
        `onceonly: the aws-sns message is for topic ${JSON.stringify(String(m.TopicArn).slice(0, 256))}, which this endpoint does not accept; add it to topicArn`,
      );
    }
    let signed = '';
    for (const field of SIGNED[type as AwsSnsEvent['Type']]) {
      const value = m[field];
      if (value === undefined && field === 'Subject') continue;
      if (typeof value !== 'string') throw invalid(`has no ${field}`);
      signed += `${field}\n${value}\n`;
    }
    const version = m.SignatureVersion;
    if (version !== '1' && version !== '2') {
      throw new VerificationError(
        'malformed_header',
        'onceonly: the aws-sns SignatureVersion must be 1 (SHA1withRSA) or 2 (SHA256withRSA)',
      );
    }
    const timestamp =
      typeof m.Timestamp === 'string' && ISO_TIME.test(m.Timestamp) ? Date.parse(m.Timestamp) : Number.NaN;
    if (Number.isNaN(timestamp)) throw invalid('has no ISO 8601 UTC Timestamp');
    const certUrl = typeof m.SigningCertURL === 'string' ? m.SigningCertURL : '';
    const path = URL.canParse(certUrl) ? new URL(certUrl) : undefined;
    if (!path || !CERT_PATH.test(path.pathname) || path.search !== '' || path.hash !== '') {
      throw new VerificationError(
        'untrusted_key_url',
        'onceonly: the aws-sns SigningCertURL is not an SNS certificate path (/SimpleNotificationService-<hex>.pem); it was not fetched',
      );
    }
    return {
      signature: typeof m.Signature === 'string' ? m.Signature : '',
      encoding: 'base64',
      signatureName: 'aws-sns Signature',
      signed: [signed],
      timestampMs: timestamp,
      algorithm: version === '1' ? 'rsa-sha1' : 'rsa-sha256',
      keyUrl: certUrl,
      parsed: m,
    };
  };
}

/** GETs a SubscribeURL (checked first), within the key timeout; `key_unavailable` (503) when SNS does not confirm. */
async function confirm(url: string, options: AwsSnsOptions): Promise<void> {
  const checked = checkSenderUrl('aws-sns', url, SNS_HOSTS, 'SubscribeURL');
  const request = options.fetch ?? (globalThis.fetch as unknown as KeyFetch | undefined);
  if (typeof request !== 'function') {
    throw new ConfigError(
      'invalid_option',
      'onceonly: aws-sns confirms subscriptions with fetch: pass fetch (none is global here)',
    );
  }
  const timeoutMs = parsePositiveDuration(options.keyTimeout ?? '3s', 'keyTimeout');
  const failed = (why: string, cause?: unknown) =>
    new VerificationError(
      'key_unavailable',
      `onceonly: the aws-sns subscription could not be confirmed: ${why}; SNS will send the confirmation again`,
      { cause },
    );
  await withinDeadline(
    async (signal) => {
      const response = await request(checked.href, {
        signal,
        redirect: 'manual',
        headers: { accept: 'text/xml' },
      });
      await response.body?.cancel().catch(() => {});
      if (!response.ok) throw failed(`SNS answered ${response.status}`);
    },
    timeoutMs,
    failed,
  );
}

const CONFIRMATIONS = ['SubscriptionConfirmation', 'UnsubscribeConfirmation'];

/** Factories per accepted topic set are cheap; the declaration itself is per provider (its topics). */
function declare(topics: ReadonlySet<string>, confirmSubscriptions: boolean) {
  return asymmetric<AwsSnsEvent>({
    name: 'aws-sns',
    retention: '1d',
    tolerance: '65m',
    algorithm: 'rsa-sha256',
    read: reader(topics),
    fetchedKeys: { allowedHosts: SNS_HOSTS, format: 'pem', certificates: SNS_CERTIFICATES },
    event: { id: 'MessageId', type: 'Type', typeSigned: true },
    // SubscriptionConfirmation: verified like any message, then confirmed by a GET of its
    // SubscribeURL (on SNS's own host only). UnsubscribeConfirmation: verified and acknowledged,
    // never visited (its SubscribeURL would subscribe again).
    handshake: async (request: HandshakeRequest, { authenticate, options }) => {
      if (request.method !== 'POST') return undefined;
      const said = header(request.headers, 'x-amz-sns-message-type');
      if (
        said !== undefined ? !CONFIRMATIONS.includes(said) : !bodyIncludes(request.rawBody, 'Confirmation')
      ) {
        return undefined;
      }
      const auth = await authenticate(request);
      const m = auth?.parsed as AwsSnsEvent | undefined;
      if (m === undefined || !CONFIRMATIONS.includes(m.Type)) return undefined;
      if (m.Type === 'SubscriptionConfirmation') {
        if (!confirmSubscriptions) return undefined;
        await confirm(String(m.SubscribeURL), options as unknown as AwsSnsOptions);
      }
      return { status: 200 };
    },
  });
}

/**
 * AWS SNS (HTTP/S subscriptions): each message is signed by SNS with RSA (`SignatureVersion` 1:
 * SHA1withRSA, 2: SHA256withRSA) over its canonical `Key\nValue\n` fields; the signing certificate
 * is fetched from the message's `SigningCertURL`, but only from an SNS regional endpoint
 * (`sns.<region>.amazonaws.com`, or `.amazonaws.com.cn`) over https under
 * `/SimpleNotificationService-<hex>.pem` (checked before any request), used only when it chains to
 * a root of Node's store and is issued to `sns.amazonaws.com`, and cached. Only messages of the topics in `topicArn` are
 * accepted. Dedup keys on the signed `MessageId`; `on` routes by `Type`. A `SubscriptionConfirmation`
 * is confirmed by the receiver itself (GET of its `SubscribeURL`, same host rule; outcome
 * `handshake`), an `UnsubscribeConfirmation` acknowledged. Raw message delivery must be off (a raw
 * message carries no signature).
 *
 * @example
 * createReceiver({
 *   provider: awsSns({ topicArn: process.env.SNS_TOPIC_ARN! }),
 *   store,
 *   on: { Notification: ({ event }) => handle(JSON.parse(event.Message)) },
 * });
 */
export function awsSns<E extends AwsSnsEvent = AwsSnsEvent>(
  options: AwsSnsOptions,
): AuthenticatingProvider<E> {
  const list = typeof options.topicArn === 'string' ? [options.topicArn] : options.topicArn;
  if (
    !Array.isArray(list) ||
    list.length === 0 ||
    !list.every(
      (t) => typeof t === 'string' && /^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_.-]{1,256}$/.test(t),
    )
  ) {
    throw new ConfigError(
      'invalid_option',
      "onceonly: aws-sns needs topicArn, the ARN of each topic this endpoint accepts ('arn:aws:sns:<region>:<account>:<topic>')",
    );
  }
  const declaration = declare(new Set(list), options.confirmSubscriptions ?? true);
  // The certificates are AWS's, the same for every endpoint: the first topic names this one.
  const provider = declaration(options);
  return {
    ...provider,
    identity: namedIdentity('aws-sns', list[0]!),
  } as unknown as AuthenticatingProvider<E>;
}
