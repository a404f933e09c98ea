/**
 * AWS SNS over HTTP/S. The AWS SDK signs no SNS messages (SNS does), so the messages follow the
 * documented algorithm: https://docs.aws.amazon.com/sns/latest/dg/sns-verify-signature-of-message.html
 * (the canonical `Key\nValue\n` fields per Type, RSA with SHA1 for SignatureVersion 1 and SHA256
 * for 2, the certificate from SigningCertURL on sns.<region>.amazonaws.com) and
 * https://docs.aws.amazon.com/sns/latest/dg/SendMessageToHttp.prepare.html (confirming by visiting
 * SubscribeURL). Signing certificates are real X.509 certificates (openssl), served from a local
 * HTTP server on loopback: the provider gets a `fetch` that sends each https URL it is allowed to
 * fetch to that server, so every host check runs on the URL the message names.
 */
import { strict as assert } from 'node:assert';
import { sign as rsaSign } from 'node:crypto';
import { beforeEach, describe, it } from 'node:test';
import { ConfigError } from '../../src/index.js';
import { awsSns } from '../../src/providers/index.js';
import { certServer } from './certServer.js';
import { assertHandshake, assertRefused, handshakeReceiver } from './handshakeKit.js';
import { type Delivery, NOW, providerCases, TRICKY_JSON, TRICKY_TEXT, verifyAt } from './kit.js';

const TOPIC = 'arn:aws:sns:us-east-1:123456789012:orders';
const certUrl = (name: string) => `https://sns.us-east-1.amazonaws.com/SimpleNotificationService-${name}.pem`;

// A generous key timeout: a loaded machine must not turn a slow loopback answer into a 503.
// ---- SNS's side: certificates on loopback, and its subscription confirmation endpoint -------------

let subscribeStatus = 200;
const sns = certServer('/SimpleNotificationService-', { subject: 'sns.amazonaws.com', served: 'leaf' });
sns.route = (url, res) => {
  if (url.searchParams.get('Action') !== 'ConfirmSubscription') return false;
  res.statusCode = subscribeStatus;
  res.end('<ConfirmSubscriptionResponse/>');
  return true;
};
const { requested, keys } = sns;
const credential = (options?: Parameters<typeof sns.credential>[0]) => sns.credential(options);
const loopback = (trusted: readonly string[]) => sns.loopback(trusted);
beforeEach(() => {
  subscribeStatus = 200;
});

const make = (config: string | string[], extra: Partial<Parameters<typeof awsSns>[0]> = {}) => {
  const trusted = typeof config === 'string' ? [config] : config;
  return awsSns({
    topicArn: TOPIC,
    fetch: loopback(trusted),
    keyTimeout: '30s',
    certificateRoots: sns.roots(),
    ...extra,
  });
};

const FIELDS: Record<string, string[]> = {
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

/** Signs a message object the way SNS does, in place; returns its JSON as SNS posts it. */
function signMessage(m: Record<string, string>, name: string, version: '1' | '2' = '2'): string {
  m.SignatureVersion = version;
  m.SigningCertURL ??= certUrl(name);
  const canonical = (FIELDS[m.Type!] ?? [])
    .filter((f) => m[f] !== undefined)
    .map((f) => `${f}\n${m[f]}\n`)
    .join('');
  m.Signature = rsaSign(
    version === '1' ? 'sha1' : 'sha256',
    Buffer.from(canonical),
    keys.get(name)!,
  ).toString('base64');
  return JSON.stringify(m, null, 2);
}

const body = (at: Date) =>
  `{"Type":"Notification","MessageId":"22b80b92-fdea-4c2c-8f9d-bdfb0c7bf324","TopicArn":"${TOPIC}","Subject":"order","Message":${TRICKY_JSON},"Timestamp":"${at.toISOString()}","UnsubscribeURL":"https://sns.us-east-1.amazonaws.com/?Action=Unsubscribe&SubscriptionArn=${TOPIC}:1"}`;

function sign(payload: string, name: string): Delivery {
  let text = payload;
  try {
    text = signMessage(JSON.parse(payload) as Record<string, string>, name);
  } catch {
    // Not JSON: sent as it is (the kit's not-JSON case).
  }
  return {
    body: text,
    headers: { 'x-amz-sns-message-type': 'Notification', 'content-type': 'text/plain; charset=UTF-8' },
  };
}

const subscription = (
  type: 'SubscriptionConfirmation' | 'UnsubscribeConfirmation',
  name: string,
  fields: Record<string, string> = {},
) => {
  const m: Record<string, string> = {
    Type: type,
    MessageId: '165545c9-2a5c-472c-8df2-7ff2be2b3b1b',
    Token:
      '2336412f37fb687f5d51e6e241d09c805a5a57b30d712f794cc5f6a988666d92768dd60a747ba6f3beb71854e285d6ad02428b09ceece29417f1f02d609c582afbacc99c583a916b9981dd2728f4ae6fdb82efd087cc3b7849e05798d2d2785c03b0879594eeac82c01f235d0e717736',
    TopicArn: TOPIC,
    Message: `You have chosen to subscribe to the topic ${TOPIC}.`,
    SubscribeURL: `https://sns.us-east-1.amazonaws.com/?Action=ConfirmSubscription&TopicArn=${TOPIC}&Token=2336412f37`,
    Timestamp: NOW.toISOString(),
    ...fields,
  };
  return { body: signMessage(m, name), headers: { 'x-amz-sns-message-type': type } };
};

describe('aws-sns provider (messages signed as SNS signs them, certificates fetched from loopback)', () => {
  providerCases<string>({
    name: 'aws-sns',
    credential: () => {
      const name = credential();
      return { signer: name, config: name };
    },
    make,
    body,
    sign: (payload, name) => sign(payload, name),
    expect: {
      dedup: 'id',
      id: '22b80b92-fdea-4c2c-8f9d-bdfb0c7bf324',
      type: 'Notification',
      typeSigned: true,
    },
    noteOf: (event) => (event as { Message: unknown }).Message,
    toleranceMs: 65 * 60_000,
    // SNS signs field values, not bytes: re-serialised JSON carries the same values.
    reserialisable: false,
    nonJson: 'both-reject',
    malformed: [],
  });
});

describe('aws-sns certificates and topics', () => {
  it('verifies SignatureVersion 1 (SHA1withRSA) and 2 (SHA256withRSA), and refuses a version that does not match the signature', async () => {
    const k = credential();
    for (const version of ['1', '2'] as const) {
      const m = JSON.parse(body(NOW)) as Record<string, string>;
      const v = await verifyAt(make(k), { body: signMessage(m, k, version), headers: {} });
      assert.equal(v.id, '22b80b92-fdea-4c2c-8f9d-bdfb0c7bf324');
      const lying = JSON.parse(signMessage(JSON.parse(body(NOW)), k, version)) as Record<string, string>;
      lying.SignatureVersion = version === '1' ? '2' : '1';
      await assert.rejects(verifyAt(make(k), { body: JSON.stringify(lying), headers: {} }), {
        code: 'invalid_signature',
      });
    }
    const m = JSON.parse(signMessage(JSON.parse(body(NOW)), k)) as Record<string, string>;
    m.SignatureVersion = '3';
    await assert.rejects(verifyAt(make(k), { body: JSON.stringify(m), headers: {} }), {
      code: 'malformed_header',
    });
  });

  it('refuses a SigningCertURL off sns.<region>.amazonaws.com, over http, on a port, or not a .pem, without any request', async () => {
    const k = credential();
    for (const url of [
      `https://evil.example/SimpleNotificationService-${k}.pem`,
      `https://sns.us-east-1.amazonaws.com.evil.example/SimpleNotificationService-${k}.pem`,
      `https://s3.amazonaws.com/SimpleNotificationService-${k}.pem`,
      `https://snsxus-east-1.amazonaws.com/SimpleNotificationService-${k}.pem`,
      `http://sns.us-east-1.amazonaws.com/SimpleNotificationService-${k}.pem`,
      `https://sns.us-east-1.amazonaws.com:444/SimpleNotificationService-${k}.pem`,
      'https://sns.us-east-1.amazonaws.com/cert.txt',
      `${sns.base()}/SimpleNotificationService-${k}.pem`,
    ]) {
      const m = JSON.parse(body(NOW)) as Record<string, string>;
      m.SigningCertURL = url;
      await assert.rejects(
        verifyAt(make(k), { body: signMessage(m, k), headers: {} }),
        { code: 'untrusted_key_url' },
        url,
      );
    }
    assert.deepEqual(requested, []);
  });

  it("refuses S3's look-alike hosts for a bucket called sns, and other paths than SNS's, without any request", async () => {
    // A forger's own certificate, served where anyone can serve one: a bucket named `sns`.
    const forged = credential({ selfSigned: true });
    for (const url of [
      `https://sns.s3.amazonaws.com/SimpleNotificationService-${forged}.pem`,
      `https://sns.s3-us-west-2.amazonaws.com/SimpleNotificationService-${forged}.pem`,
      `https://sns.s3-accelerate.amazonaws.com/SimpleNotificationService-${forged}.pem`,
      `https://sns.s3.us-east-1.amazonaws.com/SimpleNotificationService-${forged}.pem`,
      `https://sns.s3.amazonaws.com.cn/SimpleNotificationService-${forged}.pem`,
      `https://sns.us-east-1.amazonaws.com/bucket/SimpleNotificationService-${forged}.pem`,
      `https://sns.us-east-1.amazonaws.com/SimpleNotificationService-${forged}.pem?x=1`,
      'https://sns.us-east-1.amazonaws.com/SimpleNotificationService-k1.pem',
      'https://sns.us-east-1.amazonaws.com/evil.pem',
    ]) {
      const m = JSON.parse(body(NOW)) as Record<string, string>;
      m.SigningCertURL = url;
      await assert.rejects(
        verifyAt(make(forged), { body: signMessage(m, forged), headers: {} }),
        { code: 'untrusted_key_url' },
        url,
      );
    }
    assert.deepEqual(requested, []);
  });

  it('trusts a certificate only when it chains to a trusted root and is issued to sns.amazonaws.com', async () => {
    // A self-signed certificate in SNS's name, served from SNS's own host: no chain.
    const forged = credential({ selfSigned: true });
    await assert.rejects(verifyAt(make(forged), sign(body(NOW), forged)), {
      code: 'invalid_signature',
      message: /not trusted: the certificate does not chain to a trusted root/,
    });
    // A certificate from the trusted CA, but issued to another name.
    const other = credential({ subject: 'sns.evil.example' });
    await assert.rejects(verifyAt(make(other), sign(body(NOW), other)), {
      code: 'invalid_signature',
      message: /not issued to sns\.amazonaws\.com/,
    });
    // The real chain, checked against Node's own root store instead of the test root: refused.
    const k = credential();
    await assert.rejects(verifyAt(make(k, { certificateRoots: undefined }), sign(body(NOW), k)), {
      code: 'invalid_signature',
    });
    // And with the root it chains to: verified, the intermediate fetched by its CA Issuers URL.
    await verifyAt(make(k), sign(body(NOW), k));
    assert.ok(requested.some((u) => u.endsWith('/onceonly-test-intermediate.cer')));
  });

  it("takes certificates under every name AWS issues them to: sns-signing.<region>, GovCloud's and China's", async () => {
    for (const [host, subject] of [
      ['sns.ap-southeast-4.amazonaws.com', 'sns-signing.ap-southeast-4.amazonaws.com'],
      ['sns.us-gov-east-1.amazonaws.com', 'sns-us-gov-west-1.amazonaws.com'],
      ['sns.cn-north-1.amazonaws.com.cn', 'sns-cn-north-1.amazonaws.com.cn'],
    ] as const) {
      const k = credential({ subject });
      const m = JSON.parse(body(NOW)) as Record<string, string>;
      m.SigningCertURL = `https://${host}/SimpleNotificationService-${k}.pem`;
      await verifyAt(make(k), { body: signMessage(m, k), headers: {} });
    }
    // A regional name of another region is not this host's.
    const other = credential({ subject: 'sns-signing.eu-west-1.amazonaws.com' });
    const m = JSON.parse(body(NOW)) as Record<string, string>;
    m.SigningCertURL = `https://sns.ap-southeast-4.amazonaws.com/SimpleNotificationService-${other}.pem`;
    await assert.rejects(verifyAt(make(other), { body: signMessage(m, other), headers: {} }), {
      code: 'invalid_signature',
    });
  });

  it('takes certificates from the GovCloud and China regional endpoints', async () => {
    const k = credential();
    for (const host of [
      'sns.us-gov-west-1.amazonaws.com',
      'sns.cn-north-1.amazonaws.com.cn',
      'sns.il-central-1.amazonaws.com',
    ]) {
      const m = JSON.parse(body(NOW)) as Record<string, string>;
      m.SigningCertURL = `https://${host}/SimpleNotificationService-${k}.pem`;
      await verifyAt(make(k), { body: signMessage(m, k), headers: {} });
    }
  });

  it('refuses a message of a topic the endpoint does not accept before fetching anything: AWS signs every topic alike', async () => {
    const k = credential();
    const m = JSON.parse(body(NOW)) as Record<string, string>;
    m.TopicArn = 'arn:aws:sns:us-east-1:999999999999:attacker-topic';
    await assert.rejects(verifyAt(make(k), { body: signMessage(m, k), headers: {} }), {
      code: 'invalid_signature',
    });
    assert.deepEqual(requested, []);
    // The same message for an accepted topic verifies.
    await verifyAt(make(k, { topicArn: [TOPIC, m.TopicArn] }), {
      body: signMessage({ ...m }, k),
      headers: {},
    });
  });

  it('refuses an x-amz-sns-message-type header that disagrees with the signed Type', async () => {
    const k = credential();
    const d = sign(body(NOW), k);
    await assert.rejects(
      verifyAt(make(k), { ...d, headers: { 'x-amz-sns-message-type': 'SubscriptionConfirmation' } }),
      { code: 'malformed_header' },
    );
  });

  it('needs topicArn as ARNs at construction', () => {
    for (const topicArn of [undefined, [], 'orders', 'arn:aws:sqs:us-east-1:123456789012:q']) {
      assert.throws(
        () => awsSns({ topicArn: topicArn as never }),
        (error: unknown) => error instanceof ConfigError && error.code === 'invalid_option',
      );
    }
  });

  it('reads the message text back exactly', async () => {
    const k = credential();
    const v = await verifyAt(make(k), sign(body(NOW), k));
    assert.equal((v.event as { Message: string }).Message, TRICKY_TEXT);
  });
});

describe('aws-sns subscription handshakes', () => {
  it('confirms a signed SubscriptionConfirmation by visiting its SubscribeURL: outcome handshake, store and handler untouched', async () => {
    const k = credential();
    const { send, ran, touched } = handshakeReceiver(make(k));
    const d = subscription('SubscriptionConfirmation', k);
    await assertHandshake(await send({ body: d.body, headers: d.headers }), { status: 200 });
    assert.deepEqual(
      requested.map((u) => new URL(u).searchParams.get('Action') ?? new URL(u).pathname),
      // The certificate, its intermediate (by the certificate's CA Issuers URL), the confirmation.
      ['/SimpleNotificationService-' + k + '.pem', '/onceonly-test-intermediate.cer', 'ConfirmSubscription'],
    );
    assert.equal(ran(), 0);
    assert.deepEqual(touched, []);
  });

  it('refuses a forged confirmation, or one for another topic, without visiting its SubscribeURL', async () => {
    const [k, forger] = [credential(), credential()];
    const { send, touched } = handshakeReceiver(make(k));
    const forged = subscription('SubscriptionConfirmation', forger, { SigningCertURL: certUrl(k) });
    assertRefused(await send({ body: forged.body, headers: forged.headers }), 'invalid_signature');
    const foreign = subscription('SubscriptionConfirmation', k, {
      TopicArn: 'arn:aws:sns:us-east-1:999999999999:other',
    });
    assertRefused(await send({ body: foreign.body, headers: foreign.headers }), 'invalid_signature');
    assert.ok(!requested.some((u) => u.includes('ConfirmSubscription')), requested.join(' '));
    assert.deepEqual(touched, []);
  });

  it('never visits a SubscribeURL off SNS, even in a signed message; answers 503 when SNS does not confirm', async () => {
    const k = credential();
    const { send } = handshakeReceiver(make(k));
    const elsewhere = subscription('SubscriptionConfirmation', k, {
      SubscribeURL: 'https://evil.example/?Action=ConfirmSubscription',
    });
    assertRefused(await send({ body: elsewhere.body, headers: elsewhere.headers }), 'untrusted_key_url');
    assert.ok(!requested.some((u) => u.includes('evil')));
    subscribeStatus = 500;
    const d = subscription('SubscriptionConfirmation', k);
    const failed = await send({ body: d.body, headers: d.headers });
    assertRefused(failed, 'key_unavailable');
    assert.equal(failed.status, 503);
  });

  it('acknowledges an UnsubscribeConfirmation without visiting its SubscribeURL (that would subscribe again)', async () => {
    const k = credential();
    const { send, ran } = handshakeReceiver(make(k));
    const d = subscription('UnsubscribeConfirmation', k);
    await assertHandshake(await send({ body: d.body, headers: d.headers }), { status: 200 });
    assert.ok(!requested.some((u) => u.includes('ConfirmSubscription')));
    assert.equal(ran(), 0);
  });

  it('with confirmSubscriptions: false, hands the confirmation to the handler as an ordinary delivery', async () => {
    const k = credential();
    const { send, ran } = handshakeReceiver(make(k, { confirmSubscriptions: false }), { strict: false });
    const d = subscription('SubscriptionConfirmation', k);
    const result = await send({ body: d.body, headers: d.headers });
    assert.equal(result.outcome, 'processed');
    assert.equal(result.type, 'SubscriptionConfirmation');
    assert.equal(ran(), 1);
    assert.ok(!requested.some((u) => u.includes('ConfirmSubscription')));
  });
});
