/**
 * The senders whose signing certificate the receiver fetches and checks against a chain: AWS SNS
 * (RSA over the message's canonical fields, the certificate at its SigningCertURL, the intermediate
 * by the certificate's CA Issuers URL) and PayPal (RSA over `transmission id|time|webhook id|CRC-32
 * of the body`, the certificate and its chain at PAYPAL-CERT-URL). Their test keys' `trust` is a
 * `fetch` answering those URLs with test certificates, and the test root they chain to.
 */
import { createHash, type KeyObject, randomInt, sign } from 'node:crypto';
import type { SenderName } from '../names.js';
import { jsonObject, randomHex, uuid } from '../sign.js';
import type {
  HandshakeContext,
  HandshakeParts,
  SampleContext,
  SenderRow,
  SignContext,
  TestKeys,
} from '../types.js';
import {
  intermediate,
  makeTestKeys,
  signerOf,
  signingCertificate,
  testFetch,
  testRootPem,
} from './keyed-3.js';

// ---- AWS SNS -------------------------------------------------------------------------------------

/** The topic of the kit's sample messages, which `providerOptions('awsSns', ...)` accepts. */
const SNS_TOPIC = 'arn:aws:sns:us-east-1:123456789012:onceonly-test-orders';
/** The test intermediate's certificate, by the "CA Issuers" URL of every SNS test certificate. */
const SNS_ISSUER_URL = 'http://crt.test.amazontrust.com/onceonly-test-sns-ca.cer';

interface SnsSigner {
  readonly privateKey: KeyObject;
  /** The hex in `/SimpleNotificationService-<hex>.pem`. */
  readonly certName: string;
  /** The endpoint's subscription id (the tail of its SubscriptionArn). */
  readonly subscription: string;
}

/** The fields each message type signs, in order (`Key\nValue\n` each; a Notification's Subject may be absent). */
const SNS_SIGNED: Record<string, readonly string[]> = {
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
/** The order SNS writes a message's fields in. */
const SNS_ORDER = [
  'Type',
  'MessageId',
  'Token',
  'TopicArn',
  'Subject',
  'Message',
  'SubscribeURL',
  'Timestamp',
  'SignatureVersion',
  'Signature',
  'SigningCertURL',
  'UnsubscribeURL',
  'MessageAttributes',
];

/** SNS's regional endpoint for a topic: `sns.<region>.amazonaws.com` (`.com.cn` in China). */
function snsHost(topicArn: string): string {
  const [, partition, , region] = topicArn.split(':');
  const name = region && /^[a-z]{2}(-gov)?-[a-z]+-\d{1,2}$/.test(region) ? region : 'us-east-1';
  return partition === 'aws-cn' ? `sns.${name}.amazonaws.com.cn` : `sns.${name}.amazonaws.com`;
}

/** A message as SNS posts it: one field a line, `"Key" : value`, in SNS's order. */
function snsJson(m: Record<string, unknown>): string {
  const keys = [...SNS_ORDER.filter((k) => k in m), ...Object.keys(m).filter((k) => !SNS_ORDER.includes(k))];
  const value = (v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v)
      ? `{\n${Object.entries(v)
          .map(([k, inner]) => `    ${JSON.stringify(k)} : ${JSON.stringify(inner)}`)
          .join(',\n')}\n  }`
      : JSON.stringify(v);
  return `{\n${keys.map((k) => `  ${JSON.stringify(k)} : ${value(m[k])}`).join(',\n')}\n}`;
}

/**
 * Signs an SNS message as SNS does: the missing envelope fields filled in (Type, MessageId,
 * TopicArn, Timestamp), then SignatureVersion (1, SHA1withRSA, unless the message says 2),
 * SigningCertURL and Signature over the type's canonical fields.
 */
function signSnsMessage(input: Record<string, unknown>, signer: SnsSigner, id: string, at: Date) {
  const m: Record<string, unknown> = {
    Type: 'Notification',
    MessageId: id,
    TopicArn: SNS_TOPIC,
    Timestamp: at.toISOString(),
    ...input,
  };
  const fields = SNS_SIGNED[String(m.Type)];
  if (!fields) {
    throw new TypeError(
      'onceonly/testing: an awsSns payload is an SNS message: Type Notification, SubscriptionConfirmation or UnsubscribeConfirmation',
    );
  }
  const host = snsHost(String(m.TopicArn));
  if (m.Type === 'Notification' && m.UnsubscribeURL === undefined) {
    m.UnsubscribeURL = `https://${host}/?Action=Unsubscribe&SubscriptionArn=${m.TopicArn}:${signer.subscription}`;
  }
  m.SignatureVersion = m.SignatureVersion === '2' ? '2' : '1';
  m.SigningCertURL = `https://${host}/SimpleNotificationService-${signer.certName}.pem`;
  let canonical = '';
  for (const field of fields) {
    const value = m[field];
    if (value === undefined && field === 'Subject') continue;
    if (typeof value !== 'string') {
      throw new TypeError(`onceonly/testing: an SNS ${m.Type} needs ${field} as a string`);
    }
    canonical += `${field}\n${value}\n`;
  }
  const hash = m.SignatureVersion === '1' ? 'sha1' : 'sha256';
  m.Signature = sign(hash, Buffer.from(canonical, 'utf8'), signer.privateKey).toString('base64');
  return { text: snsJson(m), message: m };
}

function snsHeaders(m: Record<string, unknown>, signer: SnsSigner): Record<string, string> {
  return {
    'x-amz-sns-message-type': String(m.Type),
    'x-amz-sns-message-id': String(m.MessageId),
    'x-amz-sns-topic-arn': String(m.TopicArn),
    ...(m.Type === 'Notification'
      ? { 'x-amz-sns-subscription-arn': `${m.TopicArn}:${signer.subscription}` }
      : {}),
    'user-agent': 'Amazon Simple Notification Service Agent',
  };
}

function snsSign(ctx: SignContext) {
  const signer = signerOf<SnsSigner>(ctx.keys, 'awsSns');
  const { text, message } = signSnsMessage(
    jsonObject(ctx.text, 'an awsSns payload is an SNS message, a JSON object'),
    signer,
    ctx.id,
    ctx.at,
  );
  return { body: text, headers: snsHeaders(message, signer) };
}

/** A SubscriptionConfirmation, signed: the receiver confirms it by a GET of its SubscribeURL. */
function snsHandshake(ctx: HandshakeContext): HandshakeParts {
  const signer = signerOf<SnsSigner>(ctx.keys, 'awsSns');
  const token = ctx.challenge;
  const host = snsHost(SNS_TOPIC);
  const { text, message } = signSnsMessage(
    {
      Type: 'SubscriptionConfirmation',
      MessageId: uuid(),
      Token: token,
      TopicArn: SNS_TOPIC,
      Message: `You have chosen to subscribe to the topic ${SNS_TOPIC}.\nTo confirm the subscription, visit the SubscribeURL included in this message.`,
      SubscribeURL: `https://${host}/?Action=ConfirmSubscription&TopicArn=${SNS_TOPIC}&Token=${token}`,
      Timestamp: ctx.at.toISOString(),
    },
    signer,
    '',
    ctx.at,
  );
  return {
    method: 'POST',
    headers: { ...snsHeaders(message, signer), 'content-type': 'text/plain; charset=UTF-8' },
    body: text,
  };
}

/** Answers SNS's certificate URLs, the intermediate's, and subscription confirmations. */
function snsTestKeys(): TestKeys {
  const ca = intermediate('onceonly test SNS CA');
  const { privateKey, certificate } = signingCertificate(ca, 'sns.amazonaws.com', SNS_ISSUER_URL);
  const certName = createHash('sha256').update(certificate.der).digest('hex').slice(0, 32);
  const subscription = uuid();
  const fetch = testFetch(({ url, method }) => {
    if (url.href === SNS_ISSUER_URL) return { body: ca.certificate.der, type: 'application/pkix-cert' };
    if (!/^sns\.[a-z0-9-]+\.amazonaws\.com(\.cn)?$/.test(url.hostname) || method !== 'GET') return undefined;
    if (/^\/SimpleNotificationService-[0-9a-f]+\.pem$/.test(url.pathname)) {
      return { body: certificate.pem, type: 'application/x-x509-ca-cert' };
    }
    if (url.pathname === '/' && url.searchParams.get('Action') === 'ConfirmSubscription') {
      const arn = `${url.searchParams.get('TopicArn') ?? SNS_TOPIC}:${subscription}`;
      return {
        type: 'text/xml',
        body: `<ConfirmSubscriptionResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/">\n  <ConfirmSubscriptionResult>\n    <SubscriptionArn>${arn}</SubscriptionArn>\n  </ConfirmSubscriptionResult>\n  <ResponseMetadata>\n    <RequestId>${uuid()}</RequestId>\n  </ResponseMetadata>\n</ConfirmSubscriptionResponse>\n`,
      };
    }
    return undefined;
  });
  const signer: SnsSigner = { privateKey, certName, subscription };
  return makeTestKeys('awsSns', { fetch, certificateRoots: [testRootPem()] }, signer);
}

/** An S3 event notification, the most common message SNS carries to an HTTP endpoint. */
const s3Message = (eventName: string) => (ctx: SampleContext) => ({
  Type: 'Notification',
  MessageId: ctx.id,
  TopicArn: SNS_TOPIC,
  Subject: 'Amazon S3 Notification',
  Message: JSON.stringify({
    Records: [
      {
        eventVersion: '2.1',
        eventSource: 'aws:s3',
        awsRegion: 'us-east-1',
        eventTime: ctx.iso,
        eventName,
        userIdentity: { principalId: 'AWS:AIDAJDPLRKLG7UEXAMPLE' },
        requestParameters: { sourceIPAddress: '203.0.113.10' },
        responseElements: { 'x-amz-request-id': randomHex(16).toUpperCase(), 'x-amz-id-2': randomHex(40) },
        s3: {
          s3SchemaVersion: '1.0',
          configurationId: 'onceonly-orders',
          bucket: {
            name: 'onceonly-orders',
            ownerIdentity: { principalId: 'A3NL1KOZZKExample' },
            arn: 'arn:aws:s3:::onceonly-orders',
          },
          object: {
            key: `orders/${ctx.id}.json`,
            size: 1024,
            eTag: randomHex(32),
            sequencer: randomHex(18).toUpperCase(),
          },
        },
      },
    ],
  }),
  Timestamp: ctx.iso,
});

// ---- PayPal --------------------------------------------------------------------------------------

interface PaypalSigner {
  readonly privateKey: KeyObject;
  readonly certUrl: string;
  readonly webhookId: string;
}

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

/** CRC-32 (IEEE 802.3) of the bytes, unsigned, as PayPal signs it. */
function crc32(bytes: Uint8Array): number {
  let crc = 0xffffffff;
  for (const byte of bytes) crc = CRC_TABLE[(crc ^ byte) & 0xff]! ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

const upperAlnum = (n: number) =>
  Array.from({ length: n }, () => 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'[randomInt(36)]).join('');

function paypalSign(ctx: SignContext) {
  const signer = signerOf<PaypalSigner>(ctx.keys, 'paypal');
  const transmission = uuid();
  // PayPal sends the time to the second: 2025-03-04T10:15:30Z.
  const time = ctx.at.toISOString().replace(/\.\d{3}Z$/, 'Z');
  const signed = `${transmission}|${time}|${signer.webhookId}|${crc32(ctx.body)}`;
  return {
    headers: {
      'paypal-auth-algo': 'SHA256withRSA',
      'paypal-auth-version': 'v2',
      'paypal-cert-url': signer.certUrl,
      'paypal-transmission-id': transmission,
      'paypal-transmission-sig': sign('sha256', Buffer.from(signed, 'utf8'), signer.privateKey).toString(
        'base64',
      ),
      'paypal-transmission-time': time,
      'correlation-id': randomHex(13),
      'user-agent': 'PayPal/AUHD-214.0-58391224',
    },
  };
}

/** Answers PayPal's certificate URLs with the test certificate and its intermediate (as PayPal serves its chain). */
function paypalTestKeys(): TestKeys {
  const ca = intermediate('onceonly test PayPal CA');
  const { privateKey, certificate } = signingCertificate(ca, 'messageverificationcerts.paypal.com');
  const chain = `${certificate.pem}${ca.certificate.pem}`;
  const hosts = ['api.paypal.com', 'api-m.paypal.com', 'api.sandbox.paypal.com', 'api-m.sandbox.paypal.com'];
  const fetch = testFetch(({ url, method }) =>
    method === 'GET' && hosts.includes(url.hostname) && url.pathname.startsWith('/v1/notifications/certs/')
      ? { body: chain, type: 'application/x-pem-file' }
      : undefined,
  );
  const certUrl = `https://api.paypal.com/v1/notifications/certs/CERT-360caa42-fca2a594-${randomHex(8)}`;
  // The webhook's ID as the Developer Dashboard shows it: 17 upper-case letters and digits.
  const webhookId = upperAlnum(17);
  const signer: PaypalSigner = { privateKey, certUrl, webhookId };
  return makeTestKeys('paypal', { webhookId, fetch, certificateRoots: [testRootPem()] }, signer);
}

/** A PayPal webhook event (v1 envelope, v2 resources), as in PayPal's event samples. */
const paypalEvent =
  (
    eventType: string,
    resourceType: string,
    summary: string,
    resource: (ctx: SampleContext) => Record<string, unknown>,
  ) =>
  (ctx: SampleContext) => {
    const self = `https://api.paypal.com/v1/notifications/webhooks-events/${ctx.id}`;
    return {
      id: ctx.id,
      event_version: '1.0',
      create_time: ctx.iso,
      resource_type: resourceType,
      resource_version: '2.0',
      event_type: eventType,
      summary,
      resource: resource(ctx),
      links: [
        { href: self, rel: 'self', method: 'GET' },
        { href: `${self}/resend`, rel: 'resend', method: 'POST' },
      ],
    };
  };

const amount = { currency_code: 'USD', value: '49.00' };

export const rows: readonly (SenderRow & { readonly name: SenderName })[] = [
  {
    name: 'awsSns',
    credential: 'keys',
    newId: uuid,
    samples: { Notification: s3Message('ObjectCreated:Put') },
    contentType: 'text/plain; charset=UTF-8',
    sign: snsSign,
    testKeys: snsTestKeys,
    providerOptions: ({ keys }) => ({ topicArn: SNS_TOPIC, ...keys?.trust }),
    handshake: snsHandshake,
  },
  {
    name: 'paypal',
    credential: 'keys',
    // An event id: WH-, 19 and 17 upper-case letters and digits.
    newId: () => `WH-${upperAlnum(19)}-${upperAlnum(17)}`,
    samples: {
      'PAYMENT.CAPTURE.COMPLETED': paypalEvent(
        'PAYMENT.CAPTURE.COMPLETED',
        'capture',
        'Payment completed for $ 49.00 USD',
        ({ iso }) => ({
          id: upperAlnum(17),
          amount,
          final_capture: true,
          seller_protection: { status: 'ELIGIBLE', dispute_categories: ['ITEM_NOT_RECEIVED'] },
          seller_receivable_breakdown: {
            gross_amount: amount,
            paypal_fee: { currency_code: 'USD', value: '1.72' },
            net_amount: { currency_code: 'USD', value: '47.28' },
          },
          status: 'COMPLETED',
          supplementary_data: { related_ids: { order_id: upperAlnum(17) } },
          create_time: iso,
          update_time: iso,
        }),
      ),
      'CHECKOUT.ORDER.APPROVED': paypalEvent(
        'CHECKOUT.ORDER.APPROVED',
        'checkout-order',
        'An order has been approved by buyer',
        ({ iso }) => ({
          id: upperAlnum(17),
          intent: 'CAPTURE',
          status: 'APPROVED',
          purchase_units: [{ reference_id: 'default', amount, payee: { merchant_id: upperAlnum(13) } }],
          payer: {
            payer_id: upperAlnum(13),
            email_address: 'buyer@example.com',
            name: { given_name: 'John', surname: 'Doe' },
          },
          create_time: iso,
        }),
      ),
      'BILLING.SUBSCRIPTION.ACTIVATED': paypalEvent(
        'BILLING.SUBSCRIPTION.ACTIVATED',
        'subscription',
        'Subscription activated',
        ({ iso }) => ({
          id: `I-${upperAlnum(12)}`,
          plan_id: `P-${upperAlnum(24)}`,
          status: 'ACTIVE',
          start_time: iso,
          quantity: '1',
          subscriber: { email_address: 'buyer@example.com', payer_id: upperAlnum(13) },
          create_time: iso,
        }),
      ),
      'PAYMENT.CAPTURE.REFUNDED': paypalEvent(
        'PAYMENT.CAPTURE.REFUNDED',
        'refund',
        'A $ 49.00 USD capture payment was refunded',
        ({ iso }) => ({
          id: upperAlnum(17),
          amount,
          status: 'COMPLETED',
          seller_payable_breakdown: {
            gross_amount: amount,
            net_amount: { currency_code: 'USD', value: '47.28' },
          },
          create_time: iso,
          update_time: iso,
        }),
      ),
    },
    sign: paypalSign,
    testKeys: paypalTestKeys,
  },
];
