/**
 * Plaid webhooks. The `plaid` SDK on npm fetches verification keys but signs no webhooks; the
 * deliveries follow the documented verification: https://plaid.com/docs/api/webhooks/webhook-verification/
 * (Plaid-Verification: an ES256 JWT with `kid`, claims `iat` (refuse older than 5 minutes) and
 * `request_body_sha256`; the key from POST /webhook_verification_key/get {client_id, secret,
 * key_id} → { key: JWK with expired_at }). Plaid's endpoint is played by a local server on loopback.
 */
import { strict as assert } from 'node:assert';
import { createHash, sign as ecSign, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, beforeEach, describe, it } from 'node:test';
import { ConfigError } from '../../src/index.js';
import { type PlaidFetch, plaid } from '../../src/providers/index.js';
import { type Delivery, NOW, providerCases, TRICKY_JSON, verifyAt, withHeader } from './kit.js';

const CLIENT_ID = '5e5ef8ba6a3d3c0012345678';
const SECRET = '0123456789abcdef0123456789abcd';

// ---- Plaid's key endpoint on loopback ----------------------------------------------------------

const published = new Map<string, { key: KeyObject; expired: boolean }>();
const asked: { url: string; body: Record<string, string> }[] = [];
let server: Server;
let base: string;
before(async () => {
  server = createServer((req, res) => {
    // A fresh connection per request: see certServer.ts.
    res.setHeader('connection', 'close');
    let text = '';
    req.on('data', (chunk) => {
      text += chunk;
    });
    req.on('end', () => {
      const body = JSON.parse(text || '{}') as Record<string, string>;
      asked.push({ url: req.url ?? '', body });
      const entry = published.get(body.key_id ?? '');
      if (
        req.method !== 'POST' ||
        req.url !== '/webhook_verification_key/get' ||
        body.secret !== SECRET ||
        !entry
      ) {
        res.statusCode = 400;
        res.end('{"error_code":"INVALID_WEBHOOK_VERIFICATION_KEY_ID"}');
        return;
      }
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify({
          key: {
            ...entry.key.export({ format: 'jwk' }),
            alg: 'ES256',
            kid: body.key_id,
            use: 'sig',
            created_at: 1560466150,
            expired_at: entry.expired ? 1760466150 : null,
          },
          request_id: 'Ga6vVlRhYl2Vx5B',
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});
beforeEach(() => {
  asked.length = 0;
});

const requested: string[] = [];
const loopback: PlaidFetch = (url, init) => {
  requested.push(url);
  const u = new URL(url);
  return fetch(`${base}${u.pathname}`, init);
};

let keyCount = 0;
function credential(): { name: string; key: KeyObject } {
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const name = `6c5516e1-92dc-479e-a8ff-5a51992e${String(++keyCount).padStart(4, '0')}`;
  published.set(name, { key: publicKey, expired: false });
  return { name, key: privateKey };
}

function jwt(
  payload: string,
  signer: { name: string; key: KeyObject },
  at: Date,
  claims: Record<string, unknown> = {},
): string {
  const h = Buffer.from(JSON.stringify({ alg: 'ES256', kid: signer.name, typ: 'JWT' })).toString('base64url');
  const p = Buffer.from(
    JSON.stringify({
      iat: Math.floor(at.getTime() / 1000),
      request_body_sha256: createHash('sha256').update(payload, 'utf8').digest('hex'),
      ...claims,
    }),
  ).toString('base64url');
  const s = ecSign('sha256', Buffer.from(`${h}.${p}`), {
    key: signer.key,
    dsaEncoding: 'ieee-p1363',
  }).toString('base64url');
  return `${h}.${p}.${s}`;
}

const sign = (payload: string, signer: { name: string; key: KeyObject }, at: Date): Delivery => ({
  body: payload,
  headers: { 'plaid-verification': jwt(payload, signer, at), 'content-type': 'application/json' },
});

/**
 * Providers trust the keys Plaid publishes; `config` names the keys this provider's Plaid holds: a
 * kid outside them is answered with the first one's key, so a JWT signed with any other private
 * key does not verify.
 */
const make = (config: string | string[]) => {
  const names = typeof config === 'string' ? [config] : config;
  // Keys not named are "unknown to Plaid" for this provider: its endpoint answers 400 for them.
  return plaid({
    clientId: CLIENT_ID,
    secret: SECRET,
    environment: 'sandbox',
    keyTimeout: '30s',
    fetch: (url, init) => {
      const keyId = (JSON.parse(init.body) as { key_id: string }).key_id;
      if (!names.includes(keyId)) {
        // As Plaid answers with its own key for an id it knows: here, the first one named.
        return loopback(url, {
          ...init,
          body: JSON.stringify({ ...JSON.parse(init.body), key_id: names[0] }),
        });
      }
      return loopback(url, init);
    },
  });
};

const body = () =>
  `{"environment":"sandbox","error":null,"item_id":"wz666MBjYWTp2PDzzggYhM6oWWmBb","initial_update_complete":true,"historical_update_complete":false,"webhook_code":"SYNC_UPDATES_AVAILABLE","webhook_type":"TRANSACTIONS","note":${TRICKY_JSON}}`;

describe('plaid provider (JWTs signed as documented; keys from a loopback key endpoint)', () => {
  providerCases<{ name: string; key: KeyObject }>({
    name: 'plaid',
    credential: () => {
      const c = credential();
      return { signer: c, config: c.name };
    },
    make,
    body,
    sign,
    expect: { dedup: 'body', type: 'TRANSACTIONS.SYNC_UPDATES_AVAILABLE', typeSigned: true },
    noteOf: (event) => (event as { note: unknown }).note,
    toleranceMs: 5 * 60_000,
    signatureHeader: 'plaid-verification',
    malformed: [],
  });
});

describe('plaid keys and claims', () => {
  it('asks Plaid for the key with client id, secret and key id, by POST to its own host only, and caches it per key id', async () => {
    const c = credential();
    const provider = make(c.name);
    await verifyAt(provider, sign(body(), c, NOW));
    await verifyAt(provider, sign(body(), c, NOW));
    assert.deepEqual(requested.slice(-1), ['https://sandbox.plaid.com/webhook_verification_key/get']);
    assert.equal(asked.length, 1, 'one request for two deliveries under one key');
    assert.deepEqual(asked[0]?.body, { client_id: CLIENT_ID, secret: SECRET, key_id: c.name });
  });

  it('reads a key answer within 64 KiB: a 300 MB answer is cut off after the bound, never held whole', async () => {
    // Prepare: a key endpoint whose answer is a stream of 300 MB, made only as it is pulled.
    const c = credential();
    const chunk = new Uint8Array(16 * 1024).fill(0x20);
    let pulled = 0;
    let textCalled = false;
    const huge: PlaidFetch = async () => ({
      status: 200,
      ok: true,
      headers: new Headers({ 'content-type': 'application/json' }),
      body: new ReadableStream<Uint8Array>({
        pull(controller) {
          if (pulled >= 300 * 1024 * 1024) return controller.close();
          pulled += chunk.byteLength;
          controller.enqueue(chunk);
        },
      }),
      text: async () => {
        textCalled = true;
        return '';
      },
    });
    const provider = plaid({ clientId: CLIENT_ID, secret: SECRET, environment: 'sandbox', fetch: huge });
    // Act, assess: refused as unavailable, after about 64 KiB, and text() was never used.
    await assert.rejects(verifyAt(provider, sign(body(), c, NOW)), { code: 'key_unavailable' });
    assert.ok(pulled > 0 && pulled <= 64 * 1024 + 4 * chunk.byteLength, `pulled ${pulled} bytes`);
    assert.equal(textCalled, false);
  });

  it('refuses a key Plaid reports as expired, and a kid Plaid does not know', async () => {
    const c = credential();
    published.get(c.name)!.expired = true;
    await assert.rejects(verifyAt(make(c.name), sign(body(), c, NOW)), { code: 'key_unavailable' });
    const stranger = { name: 'not-a-plaid-key', key: credential().key };
    await assert.rejects(
      verifyAt(
        plaid({ clientId: CLIENT_ID, secret: SECRET, environment: 'sandbox', fetch: loopback }),
        sign(body(), stranger, NOW),
      ),
      {
        code: 'key_unavailable',
      },
    );
  });

  it('refuses a JWT whose request_body_sha256 is not the body, and algorithms other than ES256', async () => {
    const c = credential();
    const lying = {
      body: body(),
      headers: { 'plaid-verification': jwt(body(), c, NOW, { request_body_sha256: 'ab'.repeat(32) }) },
    };
    await assert.rejects(verifyAt(make(c.name), lying), { code: 'invalid_signature' });
    const hs = `${Buffer.from('{"alg":"HS256","kid":"x"}').toString('base64url')}.${Buffer.from('{}').toString('base64url')}.AAAA`;
    await assert.rejects(verifyAt(make(c.name), withHeader(sign(body(), c, NOW), 'plaid-verification', hs)), {
      code: 'malformed_header',
    });
    const none = `${Buffer.from('{"alg":"none","kid":"x"}').toString('base64url')}.${Buffer.from('{}').toString('base64url')}.`;
    await assert.rejects(
      verifyAt(make(c.name), withHeader(sign(body(), c, NOW), 'plaid-verification', none)),
      {
        code: 'malformed_header',
      },
    );
  });

  it('refuses a Plaid token or a missing credential as client id or secret, at construction', () => {
    for (const bad of [
      { clientId: CLIENT_ID, secret: 'access-sandbox-de3ce8ef-33f8-452c-a685-8671031fc0f6' },
      { clientId: 'public-sandbox-b0e2c4ee-a763-4df5-bfe9-46a46bce993d', secret: SECRET },
      { clientId: CLIENT_ID, secret: '' },
      { clientId: undefined, secret: SECRET },
    ]) {
      assert.throws(
        () => plaid(bad as never),
        (error: unknown) => error instanceof ConfigError && error.code === 'invalid_secret',
      );
    }
    assert.throws(
      () => plaid({ clientId: CLIENT_ID, secret: SECRET, environment: 'development' as never }),
      (error: unknown) => error instanceof ConfigError && error.code === 'invalid_option',
    );
  });

  it('defaults retention to 2 days (Plaid retries for 24 hours)', () => {
    assert.equal(make('x').retentionMs, 2 * 86_400_000);
  });
});
