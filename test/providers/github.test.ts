import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { sign, verify } from '@octokit/webhooks-methods';
import { github } from '../../src/providers/index.js';
import { senders, signedDelivery, testSecret } from '../../src/testing/index.js';
import {
  type Delivery,
  NOT_JSON,
  providerCases,
  receiveAll,
  rejects,
  TRICKY_JSON,
  verifyAt,
  withHeader,
} from './kit.js';

const secret = () => randomBytes(20).toString('hex');
const DELIVERY = '72d3162e-cc78-11e3-81ab-4c9367dc0958';
const body = () =>
  `{"action": "opened", "issue": {"number": 1, "title": ${TRICKY_JSON}}, "repository": {"full_name": "o/r"}}`;

async function signed(payload: string, key: string, delivery = DELIVERY): Promise<Delivery> {
  return {
    body: payload,
    headers: {
      'x-hub-signature-256': await sign(key, payload),
      'x-github-event': 'issues',
      'x-github-delivery': delivery,
      'content-type': 'application/json',
    },
  };
}

// The shared cases sign synchronously; octokit's sign is async, so pre-sign per (body, secret).
const cache = new Map<string, Delivery>();
async function prime(payload: string, keys: string[]) {
  for (const k of keys) cache.set(`${k}|${payload}`, await signed(payload, k));
}

describe('github provider (signed by @octokit/webhooks-methods sign)', async () => {
  const keys = [secret(), secret(), secret(), secret(), secret(), secret()];
  await prime(body(), keys);
  await prime(NOT_JSON, keys);
  // The tampered body too: the no-echo case signs it to know the signature the verifier expected.
  await prime(body().replace('caf', 'cof'), keys);
  let next = 0;
  providerCases<string>({
    name: 'github',
    credential: () => {
      const k = keys[next++ % keys.length]!;
      return { signer: k, config: k };
    },
    make: (config) => github({ secret: config }),
    body,
    sign: (payload, key) => {
      const d = cache.get(`${key}|${payload}`);
      assert.ok(d, 'pre-signed delivery');
      return d;
    },
    expect: { dedup: 'body', id: DELIVERY, type: 'issues', typeSigned: false },
    noteOf: (event) => (event as { issue: { title: unknown } }).issue.title,
    toleranceMs: undefined,
    freshIdHeader: (d) => withHeader(d, 'x-github-delivery', 'a-fresh-guid-minted-by-the-replayer'),
    signatureHeader: 'x-hub-signature-256',
    malformed: ['ghp_0123456789abcdefghij', 'github_pat_11ABC', 'ghs_xyz', '', '   '],
  });

  it('agrees with @octokit/webhooks-methods verify', async () => {
    const key = secret();
    const d = await signed(body(), key);
    assert.equal(await verify(key, d.body as string, d.headers['x-hub-signature-256']!), true);
    await verifyAt(github({ secret: key }), d);
  });

  it("the test kit's deliveries (every sample type) pass @octokit/webhooks-methods verify; one byte off does not", async () => {
    for (const type of senders.find((s) => s.name === 'github')!.types) {
      const key = testSecret('github');
      const d = signedDelivery('github', { secret: key, type });
      assert.equal(d.headers['x-github-event'], type);
      assert.equal(await verify(key, d.text, d.headers['x-hub-signature-256']!), true);
      const off = d.text.replace('"', "'");
      assert.equal(await verify(key, off, d.headers['x-hub-signature-256']!), false);
    }
  });

  it('verifies a form-encoded delivery (payload=...) over its raw bytes', async () => {
    const key = secret();
    const form = `payload=${encodeURIComponent(body())}`;
    const d = await signed(form, key);
    const verified = await verifyAt(github({ secret: key }), {
      ...d,
      headers: { ...d.headers, 'content-type': 'application/x-www-form-urlencoded' },
    });
    assert.equal((verified.event as { action: string }).action, 'opened');
  });

  it('reads a signed JSON body as JSON even when resent as a form: a `&payload=` in its text never becomes the event', async () => {
    const key = secret();
    const forged = encodeURIComponent(
      JSON.stringify({ action: 'completed', repository: { full_name: 'victim/prod' } }),
    );
    const json = JSON.stringify({ action: 'created', comment: { body: `nice&payload=${forged}` } });
    const d = await signed(json, key);
    const verified = await verifyAt(github({ secret: key }), {
      ...d,
      headers: { ...d.headers, 'content-type': 'application/x-www-form-urlencoded' },
    });
    assert.equal(
      (verified.event as { action: string }).action,
      'created',
      'the signed JSON, not the text inside it',
    );
  });

  it('rejects a delivery without X-GitHub-Event as missing_header', async () => {
    const key = secret();
    await rejects(
      github({ secret: key }),
      withHeader(await signed(body(), key), 'x-github-event', undefined),
      'missing_header',
    );
  });

  it('rejects the legacy sha1= signature alone as malformed_header', async () => {
    const key = secret();
    const d = await signed(body(), key);
    const sha1 = d.headers['x-hub-signature-256']!.replace('sha256=', 'sha1=');
    await rejects(github({ secret: key }), withHeader(d, 'x-hub-signature-256', sha1), 'malformed_header');
  });

  it('keys a redelivery (new delivery id, same body) on the body digest: a duplicate', async () => {
    const key = secret();
    const { results } = await receiveAll(github({ secret: key }), [
      await signed(body(), key),
      await signed(body(), key, 'redelivery-guid'),
    ]);
    assert.match(results[0]?.key ?? '', /^github:~body:[0-9a-f]{64}$/);
    assert.equal(results[1]?.outcome, 'duplicate');
  });

  it('defaults retention to 4 days (manual redelivery window 3 days)', () => {
    assert.equal(github({ secret: secret() }).retentionMs, 4 * 86_400_000);
  });
});
