/** signedDelivery's own contract: what it returns, and a clear error for every mistake. */
import { strict as assert } from 'node:assert';
import { createHmac } from 'node:crypto';
import { it } from 'node:test';
import { createReceiver, memoryStore } from '../../src/index.js';
import { stripe } from '../../src/providers/index.js';
import {
  handshakeRequest,
  providerOptions,
  senders,
  signedDelivery,
  testSecret,
} from '../../src/testing/index.js';

it('returns the parts and a fresh Request per call, each with the exact signed bytes', async () => {
  const secret = testSecret('stripe');
  const at = new Date('2026-12-01T10:00:00Z');
  const d = signedDelivery('stripe', { secret, at, id: 'evt_fixed', type: 'payment_intent.succeeded' });
  assert.equal(d.provider, 'stripe');
  assert.equal(d.method, 'POST');
  assert.equal(d.url, 'http://localhost:3000/webhooks/stripe');
  assert.equal(d.id, 'evt_fixed');
  assert.equal(d.type, 'payment_intent.succeeded');
  const event = JSON.parse(d.text) as { id: string; type: string; created: number };
  assert.deepEqual(
    [event.id, event.type, event.created],
    ['evt_fixed', 'payment_intent.succeeded', 1796119200],
  );
  const v1 = createHmac('sha256', secret).update(`1796119200.${d.text}`).digest('hex');
  assert.equal(d.headers['stripe-signature'], `t=1796119200,v1=${v1}`);
  assert.deepEqual(new TextEncoder().encode(d.text), d.body);
  // Two requests, each with its own readable body; init() a copy the caller may change.
  assert.equal(await d.request().text(), d.text);
  assert.equal(await d.request('http://127.0.0.1:9/x').text(), d.text);
  assert.equal(d.request('http://127.0.0.1:9/x').url, 'http://127.0.0.1:9/x');
  const init = d.init();
  new Uint8Array(init.body)[0] = 0;
  assert.equal(new TextDecoder().decode(d.init().body), d.text);
  assert.ok(Object.isFrozen(d.headers));
  for (const name of Object.keys(d.headers)) assert.equal(name, name.toLowerCase());
});

it('signs a payload as given: bytes and text byte for byte, an object serialised as the sender does', () => {
  const secret = testSecret('github');
  const bytes = new Uint8Array([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x20, 0x31, 0x7d, 0x0a]); // '{"a": 1}\n'
  assert.deepEqual(signedDelivery('github', { secret, payload: bytes }).body, bytes);
  assert.equal(signedDelivery('github', { secret, payload: '{"a": 1}\n' }).text, '{"a": 1}\n');
  assert.equal(signedDelivery('github', { secret, payload: { a: 1 } }).text, '{"a":1}');
});

it('names every mistake: an unknown sender, no secret, an unknown sample type', () => {
  assert.throws(
    // @ts-expect-error: not a sender
    () => signedDelivery('stripee', { secret: 's' }),
    /no sender "stripee"; one of .*stripe/,
  );
  assert.throws(() => signedDelivery('stripe', {}), /stripe signs with a shared secret: pass secret/);
  assert.throws(
    () => signedDelivery('stripe', { secret: 's', type: 'no.such' }),
    /no sample stripe event of type "no\.such"; give a payload, or one of invoice\.paid/,
  );
});

it('keeps a leading byte-order mark in text, so text is the signed bytes (what supertest sends)', () => {
  const secret = testSecret('github');
  const bytes = new Uint8Array([0xef, 0xbb, 0xbf, ...new TextEncoder().encode('{"zen":"ok"}')]);
  const d = signedDelivery('github', { secret, payload: bytes });
  assert.deepEqual(d.body, bytes);
  assert.deepEqual(new TextEncoder().encode(d.text), bytes);
  const signature = `sha256=${createHmac('sha256', secret).update(d.text).digest('hex')}`;
  assert.equal(d.headers['x-hub-signature-256'], signature);
});

it('refuses a header HTTP cannot carry, naming the header but never the secret or id in it', () => {
  for (const [provider, options] of [
    ['gitlab', { secret: 'first-half\nsecond-half' }],
    ['github', { secret: 's', id: 'first-half\r\nx-injected: 1' }],
    ['telegram', { secret: 'first-half\0second-half' }],
  ] as const) {
    assert.throws(
      () => signedDelivery(provider, options),
      (error: Error) =>
        /header would hold a line break, a NUL or a character past U\+00FF/.test(error.message) &&
        !error.message.includes('first-half'),
      provider,
    );
  }
});

it("handshakeRequest refuses to make a signed handshake (or Meta's) without the secret", () => {
  for (const provider of ['slack', 'zoom', 'twitch', 'meta'] as const) {
    assert.throws(
      () => handshakeRequest(provider),
      /handshake is made with its secret: pass secret/,
      provider,
    );
    assert.equal(handshakeRequest(provider, { secret: testSecret(provider) }).provider, provider);
  }
});

it("providerOptions is typed as the provider's options: stripe(providerOptions('stripe', ...)) needs no cast", async () => {
  const secret = testSecret('stripe');
  const receiver = createReceiver({
    provider: stripe(providerOptions('stripe', { secret })),
    store: memoryStore(),
    handler: () => {},
  });
  const response = await receiver.fetch(signedDelivery('stripe', { secret }).request());
  assert.equal(response.headers.get('onceonly-outcome'), 'processed');
});

it("reports an id only where the delivery holds it: a payload of one's own keeps the id header's, not a body id it lacks", () => {
  const secret = testSecret('stripe');
  assert.equal(signedDelivery('stripe', { secret, id: 'evt_given', payload: { a: 1 } }).id, undefined);
  assert.equal(signedDelivery('stripe', { secret, payload: { a: 1 } }).id, undefined);
  const own = signedDelivery('stripe', { secret, id: 'evt_given', payload: { id: 'evt_given', a: 1 } });
  assert.equal(own.id, 'evt_given');
  const github = signedDelivery('github', { secret, id: 'a-delivery-guid', payload: { a: 1 } });
  assert.equal(github.id, 'a-delivery-guid');
  assert.equal(github.headers['x-github-delivery'], 'a-delivery-guid');
});

it("senders' names are SenderNames: a loop over them needs no cast", () => {
  for (const sender of senders.filter((s) => s.credential === 'secret')) {
    const d = signedDelivery(sender.name, { secret: testSecret(sender.name) });
    assert.equal(d.provider, sender.name);
  }
});
