/**
 * `identity` on every built-in provider: a non-secret digest of the endpoint's first secret (or its
 * public key), stable across constructions and processes, different for different secrets, and
 * never the secret or its plain hash. Providers whose keys are fetched from the sender (the same
 * keys for every endpoint) are named by what tells their endpoints apart.
 */
import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import { createHash, generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { createReceiver, memoryStore } from '../../src/index.js';
import * as providers from '../../src/providers/index.js';
import type { Provider } from '../../src/providers/types.js';

const hex = (n: number) => randomBytes(n).toString('hex');

interface Row {
  /** A fresh credential as the provider is configured with it. */
  credential(): string;
  make(credential: string | string[]): Provider<any, any>;
  /** True when the credential is a public key: its plain hash is then not a secret. */
  publicKey?: boolean;
  /**
   * True when the provider's keys are fetched from the sender (the same for every endpoint): its
   * identity is then named by what tells its endpoints apart (the first SNS topic, the PayPal
   * webhook id, the Plaid client id), which is `credential` here and is not a secret.
   */
  named?: boolean;
}

const ed25519 = () => {
  const { publicKey } = generateKeyPairSync('ed25519');
  return (publicKey.export({ format: 'der', type: 'spki' }) as Buffer).subarray(12).toString('hex');
};
const p256 = () => {
  const { publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  return (publicKey.export({ format: 'der', type: 'spki' }) as Buffer).toString('base64');
};

const whsec = () => `whsec_${randomBytes(24).toString('base64')}`;
const b64url = (n: number) => randomBytes(n).toString('base64url');

const rows: Record<string, Row> = {
  adyen: { credential: () => hex(32), make: (s) => providers.adyen({ secret: s }) },
  airtable: {
    credential: () => randomBytes(64).toString('base64'),
    make: (s) => providers.airtable({ secret: s }),
  },
  asana: { credential: () => hex(16), make: (s) => providers.asana({ secret: s }) },
  awsSns: {
    credential: () => `arn:aws:sns:us-east-1:123456789012:topic-${hex(4)}`,
    make: (t) => providers.awsSns({ topicArn: t }),
    named: true,
  },
  bitbucket: { credential: () => hex(16), make: (s) => providers.bitbucket({ secret: s }) },
  box: { credential: () => b64url(24), make: (s) => providers.box({ secret: s }) },
  calCom: { credential: () => hex(16), make: (s) => providers.calCom({ secret: s }) },
  calendly: { credential: () => b64url(24), make: (s) => providers.calendly({ secret: s }) },
  checkoutCom: { credential: () => hex(16), make: (s) => providers.checkoutCom({ secret: s }) },
  clerk: { credential: whsec, make: (s) => providers.clerk({ secret: s }) },
  coinbaseCommerce: { credential: () => hex(16), make: (s) => providers.coinbaseCommerce({ secret: s }) },
  dropbox: { credential: () => b64url(12), make: (s) => providers.dropbox({ secret: s }) },
  gitlab: { credential: () => hex(16), make: (s) => providers.gitlab({ secret: s }) },
  hubspot: { credential: () => randomUUID(), make: (s) => providers.hubspot({ secret: s }) },
  jira: { credential: () => hex(16), make: (s) => providers.jira({ secret: s }) },
  liveblocks: { credential: whsec, make: (s) => providers.liveblocks({ secret: s }) },
  lob: { credential: () => hex(20), make: (s) => providers.lob({ secret: s }) },
  meta: { credential: () => hex(16), make: (s) => providers.meta({ secret: s, verifyToken: 'verify-me' }) },
  mux: { credential: () => b64url(24), make: (s) => providers.mux({ secret: s }) },
  netlify: { credential: () => hex(16), make: (s) => providers.netlify({ secret: s }) },
  notion: { credential: () => `secret_${hex(16)}`, make: (s) => providers.notion({ secret: s }) },
  okta: { credential: () => b64url(24), make: (s) => providers.okta({ secret: s }) },
  paypal: {
    credential: () => hex(8).toUpperCase(),
    make: (w) => providers.paypal({ webhookId: [w].flat()[0]! }),
    named: true,
  },
  persona: { credential: () => `wbhsec_${hex(18)}`, make: (s) => providers.persona({ secret: s }) },
  plaid: {
    credential: () => hex(12),
    make: (c) => providers.plaid({ clientId: [c].flat()[0]!, secret: '0123456789abcdef0123456789abcd' }),
    named: true,
  },
  polar: { credential: () => `polar_whs_${b64url(32)}`, make: (s) => providers.polar({ secret: s }) },
  postmark: { credential: () => `postmark:${hex(16)}`, make: (s) => providers.postmark({ secret: s }) },
  razorpay: { credential: () => hex(16), make: (s) => providers.razorpay({ secret: s }) },
  resend: { credential: whsec, make: (s) => providers.resend({ secret: s }) },
  segment: { credential: () => hex(16), make: (s) => providers.segment({ secret: s }) },
  sentry: { credential: () => hex(32), make: (s) => providers.sentry({ secret: s }) },
  telegram: { credential: () => b64url(24), make: (s) => providers.telegram({ secret: s }) },
  twitch: { credential: () => b64url(24), make: (s) => providers.twitch({ secret: s }) },
  typeform: { credential: () => hex(16), make: (s) => providers.typeform({ secret: s }) },
  vercel: { credential: () => hex(16), make: (s) => providers.vercel({ secret: s }) },
  woocommerce: { credential: () => hex(16), make: (s) => providers.woocommerce({ secret: s }) },
  zendesk: { credential: () => b64url(32), make: (s) => providers.zendesk({ secret: s }) },
  discord: { credential: ed25519, make: (k) => providers.discord({ publicKey: k }), publicKey: true },
  github: { credential: () => hex(16), make: (s) => providers.github({ secret: s }) },
  hmac: {
    credential: () => hex(16),
    make: (s) => providers.hmac({ name: 'acme', secret: s, signatureHeader: 'x-acme-signature' }),
  },
  intercom: { credential: () => hex(16), make: (s) => providers.intercom({ secret: s }) },
  lemonSqueezy: { credential: () => hex(16), make: (s) => providers.lemonSqueezy({ secret: s }) },
  linear: { credential: () => `lin_wh_${hex(16)}`, make: (s) => providers.linear({ secret: s }) },
  mailgun: { credential: () => hex(16), make: (s) => providers.mailgun({ secret: s }) },
  paddle: { credential: () => `pdl_ntfset_${hex(16)}`, make: (s) => providers.paddle({ secret: s }) },
  sendgrid: { credential: p256, make: (k) => providers.sendgrid({ publicKey: k }), publicKey: true },
  shopify: { credential: () => hex(16), make: (s) => providers.shopify({ secret: s }) },
  slack: { credential: () => hex(16), make: (s) => providers.slack({ secret: s }) },
  square: { credential: () => hex(16), make: (s) => providers.square({ secret: s }) },
  standardWebhooks: {
    credential: () => `whsec_${randomBytes(24).toString('base64')}`,
    make: (s) => providers.standardWebhooks({ secret: s }),
  },
  stripe: { credential: () => `whsec_${hex(16)}`, make: (s) => providers.stripe({ secret: s }) },
  twilio: { credential: () => hex(16), make: (s) => providers.twilio({ secret: s }) },
  zoom: { credential: () => hex(16), make: (s) => providers.zoom({ secret: s }) },
};

const dir = join(import.meta.dirname, '../../src/providers');
const factories = readdirSync(dir)
  .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'))
  .map((f) => f.replace(/\.ts$/, ''))
  .filter((n) => !['index', 'shared', 'types'].includes(n));

describe('provider identity', () => {
  it('the table covers every built-in provider', () => {
    assert.deepEqual(Object.keys(rows).sort(), [...factories].sort());
  });

  for (const [name, row] of Object.entries(rows)) {
    if (row.named) {
      it(`${name}: an identity named by what tells its endpoints apart, so two endpoints on one store are told apart`, () => {
        const a = row.credential();
        const b = row.credential();
        const identity = row.make(a).identity;
        assert.match(identity ?? '', /^[0-9a-f]{16}$/);
        assert.equal(row.make(a).identity, identity, 'the same endpoint gives the same identity');
        assert.notEqual(row.make(b).identity, identity, 'another endpoint gives another identity');
        const store = memoryStore();
        createReceiver({ provider: row.make(a), store, handler: () => {}, logger: false });
        assert.throws(
          () => createReceiver({ provider: row.make(b), store, handler: () => {}, logger: false }),
          {
            code: 'key_space_taken',
          },
        );
        createReceiver({
          name: `${name}-two`,
          provider: row.make(b),
          store,
          handler: () => {},
          logger: false,
        });
      });
      continue;
    }
    it(`${name}: a 16-hex identity, the same for the same credential, different for another`, () => {
      const a = row.credential();
      const b = row.credential();
      const identity = row.make(a).identity;
      assert.match(identity ?? '', /^[0-9a-f]{16}$/);
      assert.equal(row.make(a).identity, identity, 'the same credential gives the same identity');
      assert.notEqual(row.make(b).identity, identity, 'another credential gives another identity');
      // While rotating, the first credential names the endpoint.
      assert.equal(row.make([a, b]).identity, identity);
      assert.notEqual(row.make([b, a]).identity, identity);
    });

    if (!row.publicKey) {
      it(`${name}: the identity reveals neither the secret nor its plain hash`, () => {
        const secret = row.credential();
        const identity = row.make(secret).identity ?? '';
        assert.ok(!secret.includes(identity), 'the identity is part of the secret');
        assert.ok(!identity.includes(secret.slice(0, 8)), 'the identity holds part of the secret');
        const plain = [secret, secret.replace(/^whsec_/, '')];
        for (const s of plain) {
          for (const bytes of [Buffer.from(s, 'utf8'), Buffer.from(s, 'base64')]) {
            const hash = createHash('sha256').update(bytes).digest('hex');
            assert.ok(!hash.startsWith(identity), 'the identity is the plain SHA-256 of the secret');
          }
        }
      });
    }
  }

  it('is stable across processes for the same secret', () => {
    const secret = hex(16);
    const here = providers.stripe({ secret: `whsec_${secret}` }).identity;
    const script = `import { stripe } from './src/providers/index.ts'; process.stdout.write(stripe({ secret: process.argv[1] }).identity ?? '');`;
    const child = spawnSync(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '-e', script, `whsec_${secret}`],
      { cwd: join(import.meta.dirname, '../..'), encoding: 'utf8' },
    );
    assert.equal(child.status, 0, child.stderr);
    assert.match(child.stdout, /^[0-9a-f]{16}$/);
    assert.equal(child.stdout, here);
  });

  it('is computed from the key bytes: the whsec_ and bare base64 forms of one Standard Webhooks secret agree', () => {
    const key = randomBytes(24).toString('base64');
    assert.equal(
      providers.standardWebhooks({ secret: `whsec_${key}` }).identity,
      providers.standardWebhooks({ secret: key }).identity,
    );
  });
});
