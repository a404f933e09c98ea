/**
 * Constant-time comparison, which no behaviour shows, pinned by a spy: every HMAC family hands the
 * signature it computed and the one offered to `crypto.timingSafeEqual`, for a good signature and
 * for a wrong one of the same length alike (no `===`, no early exit on the first byte).
 */
import { strict as assert } from 'node:assert';
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { afterEach, describe, it, mock } from 'node:test';
import { github, meta, square, standardWebhooks, stripe } from '../../src/providers/index.js';
import type { Provider } from '../../src/providers/types.js';
import { type Delivery, NOW, verifyAt } from './kit.js';

const crypto = createRequire(import.meta.url)('node:crypto') as typeof import('node:crypto');
const { createHmac } = crypto;
const body = '{"id":"evt_ct_1","event_id":"ev_ct_1","type":"invoice.paid","object":"event"}';
const t = Math.floor(NOW.getTime() / 1000);
const url = 'https://example.test/webhooks/square';
const svixSecret = Buffer.from('constant time test secret bytes!').toString('base64');

const cases: {
  family: string;
  provider: Provider<any, any>;
  /** The delivery signed with `mac` (the signature's bytes), and what those bytes are. */
  delivery(mac: (bytes: Buffer) => Buffer): Delivery;
  mac(): Buffer;
}[] = [
  {
    family: 'timestamped HMAC (Stripe)',
    provider: stripe({ secret: 'whsec_ct' }),
    mac: () => createHmac('sha256', 'whsec_ct').update(`${t}.${body}`).digest(),
    delivery: (f) => ({
      body,
      headers: { 'stripe-signature': `t=${t},v1=${f(cases[0]!.mac()).toString('hex')}` },
    }),
  },
  {
    family: 'body HMAC (GitHub)',
    provider: github({ secret: 'gh-secret' }),
    mac: () => createHmac('sha256', 'gh-secret').update(body).digest(),
    delivery: (f) => ({
      body,
      headers: {
        'x-hub-signature-256': `sha256=${f(cases[1]!.mac()).toString('hex')}`,
        'x-github-event': 'ping',
        'x-github-delivery': 'd-1',
      },
    }),
  },
  {
    family: 'Standard Webhooks',
    provider: standardWebhooks({ secret: `whsec_${svixSecret}` }),
    mac: () => createHmac('sha256', Buffer.from(svixSecret, 'base64')).update(`msg_1.${t}.${body}`).digest(),
    delivery: (f) => ({
      body,
      headers: {
        'webhook-id': 'msg_1',
        'webhook-timestamp': String(t),
        'webhook-signature': `v1,${f(cases[2]!.mac()).toString('base64')}`,
      },
    }),
  },
  {
    family: 'URL + body HMAC (Square)',
    provider: square({ secret: 'sq-key', notificationUrl: url }),
    mac: () => createHmac('sha256', 'sq-key').update(`${url}${body}`).digest(),
    delivery: (f) => ({
      body,
      url,
      headers: { 'x-square-hmacsha256-signature': f(cases[3]!.mac()).toString('base64') },
    }),
  },
];

describe('signatures are compared in constant time', () => {
  afterEach(() => {
    mock.restoreAll();
    syncBuiltinESMExports();
  });

  for (const c of cases) {
    it(`${c.family}: the computed and the offered signature go through timingSafeEqual, right or wrong`, async () => {
      const spy = mock.method(crypto, 'timingSafeEqual');
      syncBuiltinESMExports();
      const expected = c.mac();

      await verifyAt(
        c.provider,
        c.delivery((bytes) => bytes),
        NOW,
      );
      const compared = spy.mock.calls.map((call) => call.arguments.map((a) => Buffer.from(a as Uint8Array)));
      assert.ok(
        compared.some(([a, b]) => a!.equals(expected) && b!.equals(expected)),
        'the good signature was compared by timingSafeEqual',
      );

      spy.mock.resetCalls();
      // The same length, the first byte wrong: an early-exit comparison would stop at once.
      const wrong = (bytes: Buffer) => {
        const copy = Buffer.from(bytes);
        copy[0]! ^= 0xff;
        return copy;
      };
      await assert.rejects(verifyAt(c.provider, c.delivery(wrong), NOW), { code: 'invalid_signature' });
      const offered = wrong(expected);
      assert.ok(
        spy.mock.calls.some((call) => {
          const pair = call.arguments.map((a) => Buffer.from(a as Uint8Array));
          return pair.some((x) => x.equals(expected)) && pair.some((x) => x.equals(offered));
        }),
        'the wrong signature was compared by timingSafeEqual too',
      );
    });
  }
});

describe('handshake verify tokens are compared in constant time', () => {
  afterEach(() => {
    mock.restoreAll();
    syncBuiltinESMExports();
  });

  it("Meta's hub.verify_token goes through timingSafeEqual (over digests, so not even its length shows), right or wrong", async () => {
    // Prepare: the only handshake that compares a configured token with an offered one.
    const provider = meta({ secret: 'meta-app-secret', verifyToken: 'my-verify-token' });
    const check = (token: string) =>
      provider.handshake!({
        method: 'GET',
        url: `https://example.test/meta?hub.mode=subscribe&hub.challenge=42&hub.verify_token=${token}`,
        rawBody: new Uint8Array(),
        headers: new Headers(),
        receivedAt: NOW,
      });
    const spy = mock.method(crypto, 'timingSafeEqual');
    syncBuiltinESMExports();
    // Act, assess: the right token is answered, and was compared by timingSafeEqual.
    assert.equal((await check('my-verify-token'))?.body, '42');
    assert.equal(spy.mock.callCount(), 1, 'the right token was compared by timingSafeEqual');
    // A wrong one of the same length, its first character off: refused, after the same comparison.
    await assert.rejects(
      Promise.resolve().then(() => check('Xy-verify-token')),
      { code: 'invalid_token' },
    );
    assert.equal(spy.mock.callCount(), 2, 'the wrong token was compared by timingSafeEqual too');
  });
});

describe('a body passed to authenticate() as another view of bytes', () => {
  it('a DataView or ArrayBuffer of a forged body is never checked against the bytes of the last one verified', async () => {
    const p = stripe({ secret: 'whsec_dv' });
    const legit = '{"id":"evt_1","type":"x","amount":100}';
    const forged = Buffer.from('{"id":"evt_1","type":"x","amount":999}');
    const headers = {
      'stripe-signature': `t=${t},v1=${createHmac('sha256', 'whsec_dv').update(`${t}.${legit}`).digest('hex')}`,
    };
    for (const body of [
      new DataView(forged.buffer, forged.byteOffset, forged.byteLength),
      forged.buffer.slice(forged.byteOffset, forged.byteOffset + forged.byteLength),
    ]) {
      await verifyAt(p, { body: legit, headers }, NOW);
      await assert.rejects(
        async () =>
          p.authenticate!({
            rawBody: body as unknown as Uint8Array,
            headers: new Headers(headers),
            receivedAt: NOW,
          }),
        // invalid_signature for the DataView; createHmac's own TypeError for an ArrayBuffer, as before.
        (err: unknown) => err instanceof Error,
        'the forged body is refused',
      );
    }
  });
});
