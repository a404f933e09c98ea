import { strict as assert } from 'node:assert';
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { netlify } from '../../src/providers/index.js';
import { signedDelivery } from '../../src/testing/index.js';
import {
  acceptsBoth,
  type Delivery,
  MINUTE,
  NOW,
  oneSecret,
  providerCases,
  rejectsBoth,
  TRICKY_JSON,
  withHeader,
} from './kit.js';

// Signed by the test kit (signedDelivery), which signs with Netlify's documented scheme
// (https://docs.netlify.com/site-deploys/deploy-notifications/#payload-signature): X-Webhook-Signature
// is a JWS signed with the JWS secret token (HS256), claims { iss: 'netlify', sha256: hex SHA-256 of
// the body }. The tokens with other claims (another issuer, exp, nbf, alg) are made by hand below.
const secret = () => randomBytes(24).toString('base64url');
const body = () =>
  `{"id": "5f5a5b5c5d5e5f0007a8b9c0", "site_id": "0d3a9d2f-ef94-4380-93df-27ee400e2048", "state": "ready", "branch": "main", "title": ${TRICKY_JSON}}`;
const b64url = (value: string | Buffer) => Buffer.from(value).toString('base64url');

function jwt(
  key: string,
  claims: Record<string, unknown>,
  header: Record<string, unknown> = { alg: 'HS256', typ: 'JWT' },
): string {
  const data = `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(claims))}`;
  return `${data}.${createHmac('sha256', key).update(data).digest('base64url')}`;
}
const sha = (payload: string) => createHash('sha256').update(payload).digest('hex');

function sign(payload: string, key: string): Delivery {
  const d = signedDelivery('netlify', { payload, secret: key, at: NOW, type: 'deploy_created' });
  return { body: d.text, headers: { ...d.headers } };
}

describe('netlify provider (JWS HS256, signed by the test kit)', () => {
  providerCases<string>({
    name: 'netlify',
    credential: oneSecret(secret),
    make: (config) => netlify({ secret: config }),
    body,
    sign,
    expect: { dedup: 'body', type: 'deploy_created', typeSigned: false },
    noteOf: (event) => (event as { title: unknown }).title,
    toleranceMs: undefined,
    signatureHeader: 'x-webhook-signature',
    malformed: ['nfp_abc123', ' '],
  });

  it('refuses a JWS from another issuer, with alg none or RS256, or binding another body', async () => {
    const key = secret();
    const provider = netlify({ secret: key });
    const d = sign(body(), key);
    const other = (token: string) => withHeader(d, 'x-webhook-signature', token);
    await rejectsBoth(provider, other(jwt(key, { iss: 'evil', sha256: sha(body()) })), 'invalid_signature');
    await rejectsBoth(provider, other(jwt(key, { iss: 'netlify', sha256: sha('{}') })), 'invalid_signature');
    await rejectsBoth(provider, other(jwt(key, { iss: 'netlify' })), 'invalid_signature');
    const none = `${b64url('{"alg":"none"}')}.${b64url(JSON.stringify({ iss: 'netlify', sha256: sha(body()) }))}.`;
    await rejectsBoth(provider, other(none), 'malformed_header');
    await rejectsBoth(
      provider,
      other(jwt(key, { iss: 'netlify', sha256: sha(body()) }, { alg: 'RS256' })),
      'malformed_header',
    );
    await rejectsBoth(provider, other('not.a-jws'), 'malformed_header');
  });

  it('honours exp and nbf as a standard JWT check does, with 5 minutes of leeway', async () => {
    // Prepare: tokens signed with the right key over the right body, differing in their time claims.
    const key = secret();
    const provider = netlify({ secret: key });
    const d = sign(body(), key);
    const at = (claims: Record<string, unknown>) =>
      withHeader(d, 'x-webhook-signature', jwt(key, { iss: 'netlify', sha256: sha(body()), ...claims }));
    const now = NOW.getTime() / 1000;
    // Assess: expired, not yet valid, and claims of the wrong type are refused.
    await rejectsBoth(provider, at({ exp: now - 3600 }), 'timestamp_too_old');
    await rejectsBoth(provider, at({ exp: now - 6 * 60 }), 'timestamp_too_old');
    await rejectsBoth(provider, at({ nbf: now + 3600 }), 'timestamp_too_new');
    await rejectsBoth(provider, at({ exp: String(now + 3600) }), 'malformed_header');
    await rejectsBoth(provider, at({ nbf: null }), 'malformed_header');
    // Within the leeway, or valid, it verifies.
    await acceptsBoth(provider, at({ exp: now - 4 * 60 }));
    await acceptsBoth(provider, at({ nbf: now + 4 * 60, exp: now + 3600 }));
    await acceptsBoth(provider, at({ exp: (NOW.getTime() + 10 * MINUTE) / 1000 }));
  });

  it('defaults retention to 3 days', () => {
    assert.equal(netlify({ secret: secret() }).retentionMs, 3 * 86_400_000);
  });
});
