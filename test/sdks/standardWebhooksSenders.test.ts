/**
 * The named Standard Webhooks senders (Clerk, Resend, Liveblocks through Svix-style headers; Polar
 * with its UTF-8 keyed secret), each run through the shared provider cases with deliveries signed by
 * `svix` / `standardwebhooks` Webhook.sign: the libraries these senders deliver and verify with.
 */
import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { Webhook as SvixWebhook } from 'svix';
import { clerk, liveblocks, polar, resend } from '../../src/providers/index.js';
import type { Provider } from '../../src/providers/types.js';
import { type Delivery, providerCases, TRICKY_JSON, verifyAt, withHeader } from '../providers/kit.js';

const MSG = 'msg_2ZgJkP9qBq3d1vX0';

interface Sender {
  name: string;
  make: (secret: string | string[]) => Provider<any, any>;
  prefix: 'svix' | 'webhook';
  /** A fresh secret as the dashboard shows it. */
  secret: () => string;
  /** The key the signing library is given for that secret. */
  signingKey: (secret: string) => string;
  type: string;
  retentionMs: number;
  lookalikes: string[];
}

const whsec = () => `whsec_${randomBytes(24).toString('base64')}`;
const DAY = 86_400_000;

const senders: Sender[] = [
  {
    name: 'clerk',
    make: (secret) => clerk({ secret }),
    prefix: 'svix',
    secret: whsec,
    signingKey: (s) => s,
    type: 'user.created',
    retentionMs: 2 * DAY,
    lookalikes: ['sk_live_abc123', 'sk_test_abc123', 'pk_test_abc123'],
  },
  {
    name: 'resend',
    make: (secret) => resend({ secret }),
    prefix: 'svix',
    secret: whsec,
    signingKey: (s) => s,
    type: 'email.delivered',
    retentionMs: 2 * DAY,
    lookalikes: ['re_123456789_abcdefghij'],
  },
  {
    name: 'liveblocks',
    make: (secret) => liveblocks({ secret }),
    prefix: 'webhook',
    secret: whsec,
    signingKey: (s) => s,
    type: 'storageUpdated',
    retentionMs: 2 * DAY,
    lookalikes: ['sk_prod_abc123', 'pk_prod_abc123'],
  },
  {
    name: 'polar',
    make: (secret) => polar({ secret }),
    prefix: 'webhook',
    secret: () => `polar_whs_${randomBytes(24).toString('base64url')}`,
    // @polar-sh/sdk's validateEvent: `new Webhook(Buffer.from(secret, 'utf-8').toString('base64'))`.
    signingKey: (s) => Buffer.from(s, 'utf8').toString('base64'),
    type: 'order.paid',
    retentionMs: 4 * DAY,
    lookalikes: ['polar_oat_abc123', 'polar_pat_abc123'],
  },
];

for (const sender of senders) {
  const body = () =>
    `{"type": "${sender.type}", "timestamp": "2026-11-30T05:00:00Z", "data": {"note": ${TRICKY_JSON}}}`;
  const sign = (payload: string, secret: string, at: Date): Delivery => {
    const key = sender.signingKey(secret);
    const signature =
      sender.prefix === 'svix'
        ? new SvixWebhook(key).sign(MSG, at, payload)
        : new StandardWebhook(key).sign(MSG, at, payload);
    const p = sender.prefix;
    return {
      body: payload,
      headers: {
        [`${p}-id`]: MSG,
        [`${p}-timestamp`]: String(Math.floor(at.getTime() / 1000)),
        [`${p}-signature`]: signature,
      },
    };
  };

  describe(`${sender.name} provider (Standard Webhooks, signed by ${sender.prefix === 'svix' ? 'svix' : 'standardwebhooks'} Webhook.sign)`, () => {
    providerCases<string>({
      name: sender.name,
      credential: () => {
        const s = sender.secret();
        return { signer: s, config: s };
      },
      make: sender.make,
      body,
      sign,
      expect: { dedup: 'id', id: MSG, type: sender.type, typeSigned: true },
      noteOf: (event) => (event as { data: { note: unknown } }).data.note,
      toleranceMs: 5 * 60_000,
      several: (payload, good, bad, at) => {
        const sig = (k: string) => sign(payload, k, at).headers[`${sender.prefix}-signature`]!;
        return withHeader(
          sign(payload, good, at),
          `${sender.prefix}-signature`,
          `${sig(bad[0]!)} v1a,AAAA ${sig(good)} ${sig(bad[1]!)}`,
        );
      },
      signatureHeader: `${sender.prefix}-signature`,
      malformed: [...sender.lookalikes, '  '],
    });

    it(`names the key space '${sender.name}' and defaults retention to ${sender.retentionMs / DAY} days`, () => {
      const provider = sender.make(sender.secret());
      assert.equal(provider.name, sender.name);
      assert.equal(provider.retentionMs, sender.retentionMs);
    });

    it('says which credential was pasted when a look-alike is given', () => {
      assert.throws(() => sender.make(sender.lookalikes[0]!), /onceonly: .*(key|token)/);
    });

    it('agrees with the signing library’s own verify on the same delivery', async () => {
      const secret = sender.secret();
      const now = new Date();
      const d = sign(body(), secret, now);
      const key = sender.signingKey(secret);
      const theirs =
        sender.prefix === 'svix'
          ? new SvixWebhook(key).verify(d.body as string, d.headers)
          : new StandardWebhook(key).verify(d.body as string, d.headers);
      const ours = await verifyAt(sender.make(secret), d, now);
      assert.deepEqual(ours.event, theirs);
    });
  });
}

describe('polar keys with the UTF-8 bytes of its secret, as its SDK does', () => {
  it('refuses a delivery signed with the base64 decoding of the secret instead', async () => {
    const secret = `whsec_${randomBytes(24).toString('base64')}`;
    const now = new Date();
    // Signed as a generic Standard Webhooks sender would (the secret's base64 decoded): not Polar's key.
    const signature = new StandardWebhook(secret).sign(MSG, now, '{"type":"order.paid"}');
    await assert.rejects(
      verifyAt(
        polar({ secret }),
        {
          body: '{"type":"order.paid"}',
          headers: {
            'webhook-id': MSG,
            'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
            'webhook-signature': signature,
          },
        },
        now,
      ),
      /invalid|no polar signature/,
    );
  });
});
