/**
 * The kit's test keys (AWS SNS, PayPal, Plaid, Discord, SendGrid): a provider built with their
 * `trust` says so (`testKeys: true`, one warning per provider), one built with anything else does
 * not, and nothing but passing the kit's values makes a provider accept the kit's deliveries. Also
 * what the key-signed rows can do beyond the shared harness (test/testing/deliveries.test.ts): SNS's
 * SignatureVersion 2, its China endpoints and its signed subscription confirmation.
 */
import { strict as assert } from 'node:assert';
import { generateKeyPairSync } from 'node:crypto';
import { after, before, describe, it, mock } from 'node:test';
import { rootCertificates } from 'node:tls';
import { createReceiver, memoryStore, type Provider } from '../../src/index.js';
import { awsSns, discord, paypal, plaid, sendgrid } from '../../src/providers/index.js';
import { handshakeRequest, type SignedDelivery, signedDelivery, testKeys } from '../../src/testing/index.js';

const TOPIC = 'arn:aws:sns:us-east-1:123456789012:onceonly-test-orders';
const PLAID = { clientId: '65f1c3a9d2e4b70019a3c5e1', secret: '0f3c2b9a8e7d6c5b4a39281706f5e4' };

/** What the process looked like before the kit made any key: nothing of it may change. */
const initially = { fetch: globalThis.fetch, roots: [...rootCertificates], env: { ...process.env } };

async function outcome(
  provider: Provider<any, any>,
  d: SignedDelivery | ReturnType<typeof handshakeRequest>,
) {
  const receiver = createReceiver({ provider, store: memoryStore(), handler: () => {}, logger: false });
  const response = await receiver.fetch(d.request());
  return {
    status: response.status,
    outcome: response.headers.get('onceonly-outcome'),
    text: await response.text(),
  };
}

/** Each key-signed provider, built with its own kit trust (typed: no cast needed). */
const withTrust = {
  awsSns: () => awsSns({ topicArn: TOPIC, ...testKeys('awsSns').trust }),
  paypal: () => paypal({ ...testKeys('paypal').trust }),
  plaid: () => plaid({ ...PLAID, ...testKeys('plaid').trust }),
  discord: () => discord({ ...testKeys('discord').trust }),
  sendgrid: () => sendgrid({ ...testKeys('sendgrid').trust }),
};

describe("providers built with onceonly/testing's test keys", () => {
  it('are marked testKeys: true and warn once per provider, whatever how many are built', () => {
    // Prepare: the first providers of this process built with test keys.
    const warn = mock.method(console, 'warn', () => {});
    try {
      // Act
      const built = Object.values(withTrust).flatMap((make) => [make(), make()]);
      // Assess
      assert.deepEqual(
        built.map((p) => p.testKeys),
        Array(10).fill(true),
      );
      assert.deepEqual(
        warn.mock.calls.map((call) => call.arguments),
        ['aws-sns', 'paypal', 'plaid', 'discord', 'sendgrid'].map((name) => [
          `onceonly: ${name} trusts onceonly/testing's test keys: for tests only, never in production`,
        ]),
      );
    } finally {
      warn.mock.restore();
    }
  });

  it('are recognised however the kit values are passed: a key among others, as PEM, roots beside a fetch of your own', () => {
    const warn = mock.method(console, 'warn', () => {});
    try {
      const other = generateKeyPairSync('ed25519').publicKey.export({ type: 'spki', format: 'der' });
      assert.equal(
        discord({ publicKey: [other.subarray(-32).toString('hex'), testKeys('discord').trust.publicKey] })
          .testKeys,
        true,
      );
      const base64 = testKeys('sendgrid').trust.publicKey;
      const pem = `-----BEGIN PUBLIC KEY-----\n${base64.replace(/.{1,64}/g, '$&\n')}-----END PUBLIC KEY-----\n`;
      assert.equal(sendgrid({ publicKey: pem }).testKeys, true);
      // Discord's hex key in capitals is the same key (the provider accepts it): still recognised.
      assert.equal(discord({ publicKey: testKeys('discord').trust.publicKey.toUpperCase() }).testKeys, true);
      const sns = testKeys('awsSns');
      const wrapped = awsSns({
        topicArn: TOPIC,
        fetch: (url, init) => sns.trust.fetch(url, init),
        certificateRoots: sns.trust.certificateRoots,
      });
      assert.equal(wrapped.testKeys, true);
    } finally {
      warn.mock.restore();
    }
  });

  it('are not marked, and do not warn, when built with anything but the kit values', () => {
    const warn = mock.method(console, 'warn', () => {});
    try {
      const ed = generateKeyPairSync('ed25519').publicKey.export({ type: 'spki', format: 'der' });
      const ec = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).publicKey;
      const kit = testKeys('awsSns');
      const ownFetch = (url: string, init: Parameters<typeof kit.trust.fetch>[1]) =>
        kit.trust.fetch(url, init);
      const built = [
        discord({ publicKey: ed.subarray(-32).toString('hex') }),
        sendgrid({ publicKey: ec.export({ type: 'spki', format: 'der' }).toString('base64') }),
        awsSns({ topicArn: TOPIC, fetch: ownFetch }),
        paypal({ webhookId: testKeys('paypal').trust.webhookId, fetch: ownFetch }),
        plaid({ ...PLAID, fetch: ownFetch }),
      ];
      assert.deepEqual(
        built.map((p) => p.testKeys),
        Array(5).fill(undefined),
      );
      assert.ok(built.every((p) => !('testKeys' in p)));
      assert.equal(warn.mock.callCount(), 0);
    } finally {
      warn.mock.restore();
    }
  });
});

describe("a receiver over a provider built with the kit's test keys", () => {
  it("warns on the receiver's own logger, and a receiver over a real key does not", () => {
    const lines: string[] = [];
    const logger = { warn: (message: string) => void lines.push(message), error: () => {}, info: () => {} };
    createReceiver({
      provider: discord({ ...testKeys('discord').trust }),
      store: memoryStore(),
      handler: () => {},
      logger,
    });
    assert.equal(lines.length, 1);
    assert.match(
      lines[0]!,
      /the discord receiver trusts onceonly\/testing's test keys: for tests only, never in production/,
    );
    const own = generateKeyPairSync('ed25519')
      .publicKey.export({ format: 'der', type: 'spki' })
      .subarray(-32)
      .toString('hex');
    createReceiver({
      provider: discord({ publicKey: own }),
      store: memoryStore(),
      handler: () => {},
      logger,
    });
    assert.equal(lines.length, 1);
  });
});

describe("nothing but the kit's values makes a provider accept the kit's deliveries", () => {
  it('a provider with its own key, or served the kit certificate without the test root, refuses them', async () => {
    // Prepare: the kit's keys and deliveries, and providers that were not given the kit's trust.
    const d = testKeys('discord');
    const otherKey = generateKeyPairSync('ed25519').publicKey.export({ type: 'spki', format: 'der' });
    const sns = testKeys('awsSns');
    const pp = testKeys('paypal');
    const snsServed = awsSns({ topicArn: TOPIC, fetch: (url, init) => sns.trust.fetch(url, init) });
    const paypalServed = paypal({
      webhookId: pp.trust.webhookId,
      fetch: (url, init) => pp.trust.fetch(url, init),
    });
    // Act, assess: refused (the certificate does not chain to Node's roots), and accepted once the
    // kit's values are passed.
    const refused = [
      await outcome(
        discord({ publicKey: otherKey.subarray(-32).toString('hex') }),
        signedDelivery('discord', { keys: d }),
      ),
      await outcome(snsServed, signedDelivery('awsSns', { keys: sns })),
      await outcome(paypalServed, signedDelivery('paypal', { keys: pp })),
    ];
    for (const r of refused) {
      assert.equal(r.status, 401, r.text);
      assert.match(r.text, /invalid_signature/);
    }
    assert.match(refused[1]!.text, /does not chain to a trusted root/);
    const warn = mock.method(console, 'warn', () => {});
    try {
      const accepted = await outcome(
        awsSns({ topicArn: TOPIC, ...sns.trust }),
        signedDelivery('awsSns', { keys: sns }),
      );
      assert.equal(accepted.outcome, 'processed', accepted.text);
    } finally {
      warn.mock.restore();
    }
  });

  it("making test keys changes nothing of the process: global fetch, Node's root store, the environment", () => {
    for (const name of ['awsSns', 'paypal', 'plaid', 'discord', 'sendgrid'] as const) testKeys(name);
    assert.equal(globalThis.fetch, initially.fetch);
    assert.deepEqual([...rootCertificates], initially.roots);
    assert.deepEqual({ ...process.env }, initially.env);
  });

  it('a sender that signs with a shared secret has no test keys: a type error, and a clear error at run time', () => {
    // @ts-expect-error stripe signs with a shared secret: testKeys takes the key-signed senders only
    assert.throws(() => testKeys('stripe'), /stripe signs with a shared secret, not keys: pass secret/);
  });

  it('each testKeys() call is a fresh key pair under the one test root of the process', () => {
    const [a, b] = [testKeys('awsSns'), testKeys('awsSns')];
    assert.notEqual(a.trust.fetch, b.trust.fetch);
    assert.deepEqual(a.trust.certificateRoots, b.trust.certificateRoots);
    assert.notEqual(testKeys('paypal').trust.webhookId, testKeys('paypal').trust.webhookId);
    assert.notEqual(testKeys('discord').trust.publicKey, testKeys('discord').trust.publicKey);
    assert.ok(Object.isFrozen(a) && Object.isFrozen(a.trust));
  });
});

describe('the key-signed rows beyond the shared harness', () => {
  // The providers' one warning each was proven above: quiet here.
  before(() => void mock.method(console, 'warn', () => {}));
  after(() => mock.restoreAll());

  it('SNS: signs SignatureVersion 2 when the message says so, and names the China endpoint for a China topic', async () => {
    const keys = testKeys('awsSns');
    const v2 = signedDelivery('awsSns', { keys, payload: { Message: 'hello', SignatureVersion: '2' } });
    assert.match(v2.text, /"SignatureVersion" : "2"/);
    assert.equal((await outcome(awsSns({ topicArn: TOPIC, ...keys.trust }), v2)).outcome, 'processed');
    const china = 'arn:aws-cn:sns:cn-north-1:123456789012:orders';
    const cn = signedDelivery('awsSns', { keys, payload: { TopicArn: china, Message: 'hello' } });
    assert.match(
      cn.text,
      /"SigningCertURL" : "https:\/\/sns\.cn-north-1\.amazonaws\.com\.cn\/SimpleNotificationService-/,
    );
    assert.equal((await outcome(awsSns({ topicArn: china, ...keys.trust }), cn)).outcome, 'processed');
  });

  it('SNS: a signed SubscriptionConfirmation is confirmed through the trusted fetch (outcome handshake)', async () => {
    const keys = testKeys('awsSns');
    const confirmation = handshakeRequest('awsSns', { keys, challenge: 'ab'.repeat(64) });
    assert.equal(confirmation.headers['x-amz-sns-message-type'], 'SubscriptionConfirmation');
    const answered = await outcome(awsSns({ topicArn: TOPIC, ...keys.trust }), confirmation);
    assert.deepEqual([answered.status, answered.outcome], [200, 'handshake']);
    // Signed with other keys: refused, never confirmed.
    const forged = handshakeRequest('awsSns', { keys: testKeys('awsSns') });
    assert.equal((await outcome(awsSns({ topicArn: TOPIC, ...keys.trust }), forged)).status, 401);
    assert.throws(() => handshakeRequest('awsSns'), /signs with its own private key/);
  });

  it('PayPal: the webhook id is signed, so a provider of another webhook refuses the delivery', async () => {
    const keys = testKeys('paypal');
    const d = signedDelivery('paypal', { keys });
    const other = await outcome(paypal({ ...keys.trust, webhookId: 'ABCDEFGH12345678' }), d);
    assert.equal(other.status, 401);
    assert.equal((await outcome(paypal({ ...keys.trust }), d)).outcome, 'processed');
  });

  it('refuses keys of another sender, and a key-signed sender without keys', () => {
    assert.throws(
      () => signedDelivery('discord', { keys: testKeys('sendgrid') }),
      /sendgrid's, not discord's/,
    );
    assert.throws(() => signedDelivery('plaid', {}), /testKeys\('plaid'\)/);
    assert.throws(
      () => signedDelivery('awsSns', { keys: testKeys('awsSns'), payload: '[1]' }),
      /SNS message/,
    );
  });
});
