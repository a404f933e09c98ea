import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { ConfigError } from '../../../src/index.js';
import { token } from '../../../src/providers/families/token.js';
import { acceptsBoth, receiveAll, rejectsBoth, verifyAt, withHeader } from '../kit.js';
import { assertFamilyProperty } from './property.js';

// Three senders of the family, declared as new providers would be (as GitLab's X-Gitlab-Token, a
// bearer token, and basic auth in the URL's user info).
const headerToken = token({
  name: 'labish',
  retention: '3d',
  secret: {
    lookalikes: [['glpat-', 'a personal access token']],
    expected: 'the secret token of the webhook',
  },
  token: { header: 'x-labish-token' },
  event: {
    id: { header: 'x-labish-event-uuid', signed: false },
    type: { header: 'x-labish-event' },
    typeSigned: false,
  },
});
const bearer = token({
  name: 'bearerish',
  retention: '1d',
  token: { bearer: true },
  event: { id: 'id', type: 'type', typeSigned: true },
});
const basic = token({ name: 'basicish', retention: '1d', token: { basic: true } });

const secret = () => randomBytes(18).toString('base64url');

describe('shared-token family', () => {
  it('property: the token verifies over random bytes; any single-byte change to it does not; a body change does (the token does not cover the body)', async () => {
    const t = secret();
    await assertFamilyProperty({
      provider: headerToken({ secret: t }),
      sign: () => ({ headers: { 'x-labish-token': t } }),
      signatureHeader: 'x-labish-token',
      bodySigned: false,
    });
  });

  it('property: a basic-auth credential verifies; any single-byte change to the header does not', async () => {
    const t = `hooks:${secret()}`;
    await assertFamilyProperty({
      provider: basic({ secret: t }),
      sign: () => ({ headers: { authorization: `Basic ${Buffer.from(t).toString('base64')}` } }),
      signatureHeader: 'authorization',
      bodySigned: false,
      // The scheme name is case-insensitive: `basic` is `Basic`.
      equivalent: (_, before, after) =>
        before.slice(0, 6).toLowerCase() === after.slice(0, 6).toLowerCase() &&
        before.slice(6) === after.slice(6),
    });
  });

  it('keys on a digest of the body when the id header is unsigned: a replay with a fresh id is a duplicate', async () => {
    const t = secret();
    const d = {
      body: '{"object_kind":"push"}',
      headers: { 'x-labish-token': t, 'x-labish-event': 'Push Hook', 'x-labish-event-uuid': 'u1' },
    };
    const verified = await acceptsBoth(headerToken({ secret: t }), d);
    assert.deepEqual(
      [verified.type, verified.typeSigned, verified.dedup, verified.id],
      ['Push Hook', false, 'body', 'u1'],
    );
    const { results } = await receiveAll(headerToken({ secret: t }), [
      d,
      withHeader(d, 'x-labish-event-uuid', 'u2'),
    ]);
    assert.deepEqual(
      results.map((r) => r.outcome),
      ['processed', 'duplicate'],
    );
  });

  it('takes any token while rotating, refuses a wrong, missing or malformed one', async () => {
    const [a, b] = [secret(), secret()];
    const body = '{"id":"e1","type":"t"}';
    await acceptsBoth(bearer({ secret: [b, a] }), { body, headers: { authorization: `Bearer ${a}` } });
    await acceptsBoth(bearer({ secret: a }), { body, headers: { authorization: `bearer ${a}` } });
    await rejectsBoth(
      bearer({ secret: b }),
      { body, headers: { authorization: `Bearer ${a}` } },
      'invalid_token',
    );
    await rejectsBoth(
      bearer({ secret: a }),
      { body, headers: { authorization: `Basic ${a}` } },
      'malformed_header',
    );
    await rejectsBoth(bearer({ secret: a }), { body, headers: {} }, 'missing_header');
    await rejectsBoth(
      basic({ secret: 'u:p' }),
      { body, headers: { authorization: 'Basic %%%' } },
      'malformed_header',
    );
    await rejectsBoth(
      basic({ secret: 'u:p' }),
      { body, headers: { authorization: `Basic ${btoa('u:q')}` } },
      'invalid_token',
    );
    assert.equal(
      (await verifyAt(bearer({ secret: a }), { body, headers: { authorization: `Bearer ${a}` } })).id,
      'e1',
    );
  });

  it('refuses a look-alike credential, and basic auth without user:password, at construction', () => {
    assert.throws(
      () => headerToken({ secret: 'glpat-abc' }),
      (e: unknown) =>
        e instanceof ConfigError && e.code === 'invalid_secret' && /personal access token/.test(e.message),
    );
    assert.throws(
      () => basic({ secret: 'no-colon' }),
      (e: unknown) => e instanceof ConfigError && e.code === 'invalid_secret',
    );
  });
});
