/**
 * The family property for what group A (issue 15 part B) added to the families, run over the real
 * declarations that use it: RFC 3339 timestamps signed as sent (Zendesk, Box), signatures in further
 * headers (Box), whole lists per secret in one header (Persona), a compact JWS made with the secret
 * (Netlify). A valid delivery over random bytes verifies; any single-byte change to the body, the
 * signature or a signed header does not.
 */
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { box, netlify, persona, zendesk } from '../../../src/providers/index.js';
import { assertFamilyProperty } from './property.js';

const key = () => randomBytes(24).toString('base64url');
const rfc3339 = (at: Date) => at.toISOString().replace(/\.\d{3}Z$/, 'Z');

describe('group A additions to the families: the family property', () => {
  it('timestampedHmac with an RFC 3339 timestamp header (Zendesk): body, signature and timestamp changes do not verify', async () => {
    const secret = key();
    await assertFamilyProperty({
      provider: zendesk({ secret }),
      sign: (body, at) => {
        const t = rfc3339(at);
        return {
          headers: {
            'x-zendesk-webhook-signature': createHmac('sha256', secret)
              .update(t)
              .update(body)
              .digest('base64'),
            'x-zendesk-webhook-signature-timestamp': t,
          },
        };
      },
      signatureHeader: 'x-zendesk-webhook-signature',
      signedHeaders: ['x-zendesk-webhook-signature-timestamp'],
    });
  });

  it('timestampedHmac with body + timestamp signed and a second signature header (Box): changes do not verify', async () => {
    const secret = key();
    await assertFamilyProperty({
      provider: box({ secret }),
      sign: (body, at) => {
        const t = rfc3339(at);
        return {
          headers: {
            'box-delivery-timestamp': t,
            'box-signature-secondary': createHmac('sha256', secret).update(body).update(t).digest('base64'),
          },
        };
      },
      // The secondary header alone, so a change to it is the only signature offered.
      signatureHeader: 'box-signature-secondary',
      signedHeaders: ['box-delivery-timestamp'],
    });
  });

  it('timestampedHmac with whole lists per secret (Persona): changes to body or header do not verify', async () => {
    const secret = key();
    const list = (k: string, body: Uint8Array, t: number) =>
      `t=${t},v1=${createHmac('sha256', k).update(`${t}.`).update(body).digest('hex')}`;
    await assertFamilyProperty({
      provider: persona({ secret }),
      sign: (body, at) => {
        const t = Math.floor(at.getTime() / 1000);
        // One list, read by the group-aware path Persona always takes. (With two lists a change to
        // the other secret's list still verifies, by design: either may match.)
        return { headers: { 'persona-signature': list(secret, body, t) } };
      },
      signatureHeader: 'persona-signature',
      hexSignature: true,
    });
  });

  it('bodyHmac with a compact JWS made with the secret (Netlify): changes to body or token do not verify', async () => {
    const secret = key();
    const b64url = (v: string | Buffer) => Buffer.from(v).toString('base64url');
    await assertFamilyProperty({
      provider: netlify({ secret }),
      sign: (body) => {
        const claims = { iss: 'netlify', sha256: createHash('sha256').update(body).digest('hex') };
        const data = `${b64url('{"alg":"HS256","typ":"JWT"}')}.${b64url(JSON.stringify(claims))}`;
        return {
          headers: {
            'x-webhook-signature': `${data}.${createHmac('sha256', secret).update(data).digest('base64url')}`,
          },
        };
      },
      signatureHeader: 'x-webhook-signature',
    });
  });
});
