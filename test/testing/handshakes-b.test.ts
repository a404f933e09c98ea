/**
 * The kit's handshakes of the body-HMAC senders (b) against onceonly's own receiver: Meta's
 * `hub.challenge` GET is echoed once its verify token matches, Notion's verification-token POST is
 * answered 200 and its token handed to `onVerificationToken`, WooCommerce's `webhook_id` ping is
 * answered 200; none of them touches the store or the handler. (The handshakes themselves:
 * test/providers/meta.test.ts, notion.test.ts, woocommerce.test.ts; src/providers/families/challenge.ts.)
 */
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { meta, notion, woocommerce } from '../../src/providers/index.js';
import { handshakeRequest, senders, signedDelivery, testSecret } from '../../src/testing/index.js';
import { handshakeReceiver } from '../providers/handshakeKit.js';

it('the senders of this group with a handshake say so', () => {
  for (const name of ['meta', 'notion', 'woocommerce']) {
    assert.equal(senders.find((s) => s.name === name)?.handshake, true, name);
  }
  assert.throws(() => handshakeRequest('segment'), /segment makes no handshake/);
});

describe("handshakeRequest('meta')", () => {
  it('is the subscription GET, echoed with its hub.challenge as text once hub.verify_token matches', async () => {
    const verifyToken = 'meatyhamhock';
    const h = handshakeRequest('meta', { secret: verifyToken, challenge: '1158201444' });
    assert.equal(h.method, 'GET');
    assert.equal(h.challenge, '1158201444');
    const query = new URL(h.url).searchParams;
    assert.equal(query.get('hub.mode'), 'subscribe');
    assert.equal(query.get('hub.verify_token'), verifyToken);
    const { receiver, touched, outcomes, ran } = handshakeReceiver(
      meta({ secret: testSecret('meta'), verifyToken }),
    );
    const response = await receiver.fetch(h.request());
    assert.equal(response.status, 200);
    assert.equal(await response.text(), '1158201444');
    assert.equal(response.headers.get('content-type'), 'text/plain; charset=utf-8');
    assert.deepEqual(
      outcomes.map((o) => o.outcome),
      ['handshake'],
    );
    assert.equal(ran(), 0);
    assert.deepEqual(touched, []);
  });

  it('echoes a fresh challenge when none is given; another verify token is refused as invalid_token', async () => {
    const { receiver, outcomes } = handshakeReceiver(
      meta({ secret: testSecret('meta'), verifyToken: 'mine' }),
    );
    const h = handshakeRequest('meta', { secret: 'mine' });
    assert.ok(h.challenge);
    assert.equal(await (await receiver.fetch(h.request())).text(), h.challenge);
    const wrong = await receiver.fetch(handshakeRequest('meta', { secret: 'not-mine' }).request());
    assert.equal(wrong.status, 401);
    assert.notEqual(await wrong.text(), h.challenge);
    assert.deepEqual(
      outcomes.map((o) => [o.outcome, o.code]),
      [
        ['handshake', undefined],
        ['rejected', 'invalid_token'],
      ],
    );
  });
});

describe("handshakeRequest('notion')", () => {
  it('is the unsigned verification-token POST: answered 200, the token handed to onVerificationToken', async () => {
    const token = testSecret('notion');
    const seen: string[] = [];
    const { receiver, touched, outcomes, ran } = handshakeReceiver(
      notion({ secret: 'pending', onVerificationToken: (t) => void seen.push(t) }),
    );
    const h = handshakeRequest('notion', { secret: token });
    assert.equal(h.method, 'POST');
    assert.equal(h.challenge, undefined);
    assert.deepEqual(JSON.parse(h.text), { verification_token: token });
    const response = await receiver.fetch(h.request());
    assert.equal(response.status, 200);
    assert.deepEqual(seen, [token]);
    assert.deepEqual(
      outcomes.map((o) => o.outcome),
      ['handshake'],
    );
    assert.equal(ran(), 0);
    assert.deepEqual(touched, []);
  });

  it('carries a fresh token of Notion shape when none is given, which then signs the deliveries', async () => {
    const seen: string[] = [];
    const setup = handshakeReceiver(
      notion({ secret: 'pending', onVerificationToken: (t) => void seen.push(t) }),
    );
    assert.equal((await setup.receiver.fetch(handshakeRequest('notion').request())).status, 200);
    assert.equal(seen.length, 1);
    const token = seen[0]!;
    assert.match(token, /^secret_[A-Za-z0-9]{43}$/);
    // The operator pastes it into `secret`: the deliveries it signs are then processed.
    const { receiver } = handshakeReceiver(notion({ secret: token }), { strict: false });
    const processed = await receiver.fetch(signedDelivery('notion', { secret: token }).request());
    assert.equal(processed.headers.get('onceonly-outcome'), 'processed');
  });
});

describe("handshakeRequest('woocommerce')", () => {
  it('is the unsigned webhook_id ping sent on save: answered 200, store and handler untouched', async () => {
    const { receiver, touched, outcomes, ran } = handshakeReceiver(
      woocommerce({ secret: testSecret('woocommerce') }),
    );
    const h = handshakeRequest('woocommerce');
    assert.equal(h.method, 'POST');
    assert.equal(h.headers['content-type'], 'application/x-www-form-urlencoded');
    assert.match(h.text, /^webhook_id=\d+$/);
    const response = await receiver.fetch(h.request());
    assert.equal(response.status, 200);
    assert.deepEqual(
      outcomes.map((o) => o.outcome),
      ['handshake'],
    );
    assert.equal(ran(), 0);
    assert.deepEqual(touched, []);
  });
});
