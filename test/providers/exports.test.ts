import { strict as assert } from 'node:assert';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import * as providers from '../../src/providers/index.js';

const dir = join(import.meta.dirname, '../../src/providers');
const files = readdirSync(dir).filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'));
const factories = files
  .map((f) => f.replace(/\.ts$/, ''))
  .filter((n) => !['index', 'shared', 'types'].includes(n));

/** Group A (HMAC senders, issue 15 part B). */
const GROUP_A = [
  'adyen',
  'airtable',
  'bitbucket',
  'box',
  'calCom',
  'calendly',
  'checkoutCom',
  'clerk',
  'coinbaseCommerce',
  'gitlab',
  'hubspot',
  'jira',
  'liveblocks',
  'lob',
  'mux',
  'netlify',
  'notion',
  'persona',
  'polar',
  'postmark',
  'razorpay',
  'resend',
  'segment',
  'sentry',
  'telegram',
  'typeform',
  'vercel',
  'woocommerce',
  'zendesk',
];

/** Group B (handshakes and keys fetched from the sender, issue 15 part B). */
const GROUP_B = ['asana', 'awsSns', 'dropbox', 'meta', 'okta', 'paypal', 'plaid', 'twitch'];

describe('onceonly/providers exports', () => {
  it('exports one factory per provider file, named after the file', () => {
    for (const name of factories) {
      assert.equal(
        typeof (providers as Record<string, unknown>)[name],
        'function',
        `${name} is not exported`,
      );
    }
    assert.deepEqual(
      [...factories].sort(),
      [
        ...GROUP_A,
        ...GROUP_B,
        'discord',
        'github',
        'hmac',
        'intercom',
        'lemonSqueezy',
        'linear',
        'mailgun',
        'paddle',
        'sendgrid',
        'shopify',
        'slack',
        'square',
        'standardWebhooks',
        'stripe',
        'twilio',
        'zoom',
      ].sort(),
    );
  });

  it('imports no provider SDK at run time or in types, so users without stripe or octokit installed are unaffected', () => {
    for (const file of files) {
      const source = readFileSync(join(dir, file), 'utf8');
      const imports = [...source.matchAll(/^import[^;]*from '([^']+)';/gm)].map((m) => m[1]);
      for (const spec of imports) {
        assert.ok(
          spec?.startsWith('.') || spec?.startsWith('node:'),
          `${file} imports ${spec}; providers may import only relative modules and node: built-ins`,
        );
      }
    }
  });
});
