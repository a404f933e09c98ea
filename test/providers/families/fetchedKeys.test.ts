/**
 * Keys fetched from the sender, served by a local HTTP server on loopback. The providers are given a
 * `fetch` that sends `https://<allowed host>/...` to that server, so every check runs on the URL the
 * delivery names (https, allowed host) while the bytes come from 127.0.0.1.
 */
import { strict as assert } from 'node:assert';
import { execFileSync } from 'node:child_process';
import { createHash, generateKeyPairSync, type KeyObject, sign } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import { createReceiver, memoryStore } from '../../../src/index.js';
import { asymmetric } from '../../../src/providers/families/asymmetric.js';
import type { KeyFetch } from '../../../src/providers/families/fetchedKeys.js';
import { KeyFetcher } from '../../../src/providers/families/fetchedKeys.js';
import { code, NOW, verifyAt } from '../kit.js';

// ---- the sender's key server -------------------------------------------------------------------

type Route = (req: IncomingMessage, res: ServerResponse) => void;
let server: Server;
let base: string;
const routes = new Map<string, Route>();
const hits = new Map<string, number>();
const fetched: string[] = [];

before(async () => {
  server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    hits.set(path, (hits.get(path) ?? 0) + 1);
    const route = routes.get(path);
    if (route) route(req, res);
    else {
      res.statusCode = 404;
      res.end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});
beforeEach(() => {
  routes.clear();
  hits.clear();
  fetched.length = 0;
});

/** Sends any https URL to the loopback server, keeping its path; records what was asked. */
const loopback: KeyFetch = (url, init) => {
  fetched.push(url);
  const u = new URL(url);
  return fetch(`${base}${u.pathname}${u.search}`, init) as ReturnType<KeyFetch>;
};

const serve = (path: string, body: string, type = 'text/plain') =>
  routes.set(path, (_req, res) => {
    res.setHeader('content-type', type);
    res.end(body);
  });

// ---- an SNS-like sender: the delivery names its certificate URL in the signed body -------------

const snsLike = asymmetric({
  name: 'snsish',
  retention: '1d',
  algorithm: 'rsa-sha256',
  fetchedKeys: {
    allowedHosts: [/^sns\.[a-z0-9-]+\.amazonaws\.com$/],
    format: 'pem',
  },
  read: (input) => {
    const m = JSON.parse(Buffer.from(input.rawBody).toString('utf8')) as Record<string, string>;
    return {
      signature: m.Signature ?? '',
      encoding: 'base64',
      signatureName: 'snsish Signature',
      signed: [canonical(m)],
      timestampMs: Date.parse(m.Timestamp ?? ''),
      keyUrl: m.SigningCertURL,
      parsed: m,
    };
  },
  event: { id: 'MessageId', type: 'Type', typeSigned: true },
});
const FIELDS = ['Message', 'MessageId', 'Subject', 'Timestamp', 'TopicArn', 'Type'];
function canonical(m: Record<string, string>): string {
  return FIELDS.filter((f) => m[f] !== undefined)
    .map((f) => `${f}\n${m[f]}\n`)
    .join('');
}
const CERT_URL = 'https://sns.us-east-1.amazonaws.com/SimpleNotificationService-k1.pem';

function snsMessage(key: KeyObject, fields: Record<string, string> = {}, at = NOW): string {
  const m: Record<string, string> = {
    Type: 'Notification',
    MessageId: `m-${Math.random().toString(36).slice(2)}`,
    TopicArn: 'arn:aws:sns:us-east-1:123:topic',
    Message: 'hello café',
    Timestamp: at.toISOString(),
    SigningCertURL: CERT_URL,
    ...fields,
  };
  m.Signature = sign('sha256', Buffer.from(canonical(m)), key).toString('base64');
  return JSON.stringify(m);
}

const rsa = () => generateKeyPairSync('rsa', { modulusLength: 2048 });
const pem = (key: KeyObject) => key.export({ format: 'pem', type: 'spki' }) as string;

// ---- a JWKS sender: fixed key-set URL, the JWS names its key by kid ----------------------------

const JWKS_URL = 'https://keys.example.test/.well-known/jwks.json';
const jwksSender = asymmetric({
  name: 'jwksish',
  retention: '1d',
  jws: { header: 'x-jws', algorithms: ['ES256'], bodyHashClaim: 'body_sha256' },
  fetchedKeys: { url: JWKS_URL, allowedHosts: ['keys.example.test'], format: 'jwks' },
  event: { id: 'id', typeSigned: false },
});
function jws(body: string, key: KeyObject, kid: string, at = NOW): string {
  const h = Buffer.from(JSON.stringify({ alg: 'ES256', kid })).toString('base64url');
  const p = Buffer.from(
    JSON.stringify({
      iat: Math.floor(at.getTime() / 1000),
      body_sha256: createHash('sha256').update(body).digest('hex'),
    }),
  ).toString('base64url');
  const s = sign('sha256', Buffer.from(`${h}.${p}`), { key, dsaEncoding: 'ieee-p1363' }).toString(
    'base64url',
  );
  return `${h}.${p}.${s}`;
}
const ec = () => generateKeyPairSync('ec', { namedCurve: 'P-256' });
const jwks = (...keys: [string, KeyObject][]) =>
  JSON.stringify({ keys: keys.map(([kid, k]) => ({ ...k.export({ format: 'jwk' }), kid, use: 'sig' })) });

// ---- a sender naming its certificate URL in a header (as PayPal's paypal-cert-url) -------------

const headerNamed = asymmetric({
  name: 'certheader',
  retention: '1d',
  algorithm: 'rsa-sha256',
  signature: { header: 'x-sig', encoding: 'base64' },
  timestamp: { header: 'x-time' },
  fetchedKeys: { urlHeader: 'x-cert-url', allowedHosts: ['*.certs.example.test'], format: 'pem' },
  event: { id: 'id', typeSigned: false },
});
function headerDelivery(key: KeyObject, certUrl: string, body = '{"id":"p1"}') {
  const t = String(Math.floor(NOW.getTime() / 1000));
  const sig = sign('sha256', Buffer.from(t + body), key).toString('base64');
  return { body, headers: { 'x-sig': sig, 'x-time': t, 'x-cert-url': certUrl } };
}

describe('keys fetched from the sender', () => {
  it('verifies an SNS-like message with the certificate its signed body names, fetched once and then cached', async () => {
    const { publicKey, privateKey } = rsa();
    serve('/SimpleNotificationService-k1.pem', pem(publicKey));
    const provider = snsLike({ fetch: loopback });
    const first = await verifyAt(provider, { body: snsMessage(privateKey), headers: {} });
    assert.equal(first.type, 'Notification');
    await verifyAt(provider, { body: snsMessage(privateKey), headers: {} });
    await provider.authenticate!({
      rawBody: Buffer.from(snsMessage(privateKey)),
      headers: new Headers(),
      receivedAt: NOW,
    });
    assert.equal(hits.get('/SimpleNotificationService-k1.pem'), 1, 'a cached key is not fetched twice');
  });

  it('refuses a certificate URL on a host the sender does not use, without any request', async () => {
    const { privateKey } = rsa();
    const provider = snsLike({ fetch: loopback });
    for (const url of [
      'https://evil.example/SimpleNotificationService-k1.pem',
      'https://sns.us-east-1.amazonaws.com.evil.example/k.pem',
      'https://evilsns.us-east-1.amazonaws.com/k.pem',
      'http://sns.us-east-1.amazonaws.com/k.pem',
      'https://sns.us-east-1.amazonaws.com:8443/k.pem',
      'https://user:pw@sns.us-east-1.amazonaws.com/k.pem',
      'https://127.0.0.1/k.pem',
      'not a url',
    ]) {
      const body = snsMessage(privateKey, { SigningCertURL: url });
      assert.equal(await code(verifyAt(provider, { body, headers: {} })), 'untrusted_key_url', url);
    }
    assert.deepEqual(fetched, [], 'no request was made');
    assert.equal(hits.size, 0);
  });

  it('refetches once the cache has expired', async () => {
    const { publicKey, privateKey } = rsa();
    serve('/SimpleNotificationService-k1.pem', pem(publicKey));
    const provider = snsLike({ fetch: loopback, keyCacheTtl: 1_000 });
    await verifyAt(provider, { body: snsMessage(privateKey), headers: {} });
    await verifyAt(provider, { body: snsMessage(privateKey), headers: {} });
    assert.equal(hits.get('/SimpleNotificationService-k1.pem'), 1);
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    await verifyAt(provider, { body: snsMessage(privateKey), headers: {} });
    assert.equal(hits.get('/SimpleNotificationService-k1.pem'), 2);
  });

  it('shares one request among deliveries that arrive while it runs', async () => {
    const { publicKey, privateKey } = rsa();
    routes.set('/SimpleNotificationService-k1.pem', (_req, res) => {
      setTimeout(() => res.end(pem(publicKey)), 50);
    });
    const provider = snsLike({ fetch: loopback });
    await Promise.all(
      Array.from({ length: 6 }, () => verifyAt(provider, { body: snsMessage(privateKey), headers: {} })),
    );
    assert.equal(hits.get('/SimpleNotificationService-k1.pem'), 1);
  });

  it('answers a slow key server with a clean 503 key_unavailable within the timeout, through the receiver, without touching the store or the handler', async () => {
    const { privateKey } = rsa();
    routes.set('/SimpleNotificationService-k1.pem', () => {
      // Never answers.
    });
    let ran = 0;
    const store = memoryStore();
    const receiver = createReceiver({
      provider: snsLike({ fetch: loopback, keyTimeout: 200 }),
      store,
      handler: () => {
        ran += 1;
      },
      logger: false,
    });
    const started = Date.now();
    const result = await receiver.receive({ rawBody: snsMessage(privateKey), headers: {}, receivedAt: NOW });
    const took = Date.now() - started;
    assert.equal(result.outcome, 'rejected');
    assert.equal(result.status, 503);
    assert.equal(result.code, 'key_unavailable');
    assert.ok(took < 2_000, `answered in ${took} ms`);
    assert.equal(ran, 0);
    assert.equal(await store.inspect(`snsish:${JSON.parse(snsMessage(privateKey)).MessageId}`), undefined);
  });

  it('times out even when the injected fetch ignores its abort signal', async () => {
    const { privateKey } = rsa();
    const stuck: KeyFetch = () => new Promise(() => {});
    const provider = snsLike({ fetch: stuck, keyTimeout: 100 });
    assert.equal(
      await code(verifyAt(provider, { body: snsMessage(privateKey), headers: {} })),
      'key_unavailable',
    );
  });

  it('refuses a redirect to another host, follows one on the same host, and refuses error answers and oversized or malformed key documents', async () => {
    const { publicKey, privateKey } = rsa();
    serve('/real.pem', pem(publicKey));
    routes.set('/SimpleNotificationService-k1.pem', (_req, res) => {
      res.statusCode = 302;
      res.setHeader('location', 'https://evil.example/real.pem');
      res.end();
    });
    assert.equal(
      await code(verifyAt(snsLike({ fetch: loopback }), { body: snsMessage(privateKey), headers: {} })),
      'untrusted_key_url',
    );
    assert.deepEqual(fetched, [CERT_URL], 'the redirect target was not requested');

    routes.set('/SimpleNotificationService-k1.pem', (_req, res) => {
      res.statusCode = 301;
      res.setHeader('location', '/real.pem');
      res.end();
    });
    await verifyAt(snsLike({ fetch: loopback }), { body: snsMessage(privateKey), headers: {} });

    for (const route of [
      (_req: IncomingMessage, res: ServerResponse) => {
        res.statusCode = 500;
        res.end();
      },
      (_req: IncomingMessage, res: ServerResponse) => res.end('x'.repeat(100 * 1024)),
      (_req: IncomingMessage, res: ServerResponse) =>
        res.end('-----BEGIN PUBLIC KEY-----\nnope\n-----END PUBLIC KEY-----\n'),
    ]) {
      routes.set('/SimpleNotificationService-k1.pem', route);
      assert.equal(
        await code(verifyAt(snsLike({ fetch: loopback }), { body: snsMessage(privateKey), headers: {} })),
        'key_unavailable',
      );
    }
  });

  it('keeps no failed fetch as keys: once keyFailureCooldown ran out, the next delivery tries again', async () => {
    const { publicKey, privateKey } = rsa();
    let fail = true;
    routes.set('/SimpleNotificationService-k1.pem', (_req, res) => {
      if (fail) {
        res.statusCode = 503;
        res.end();
      } else res.end(pem(publicKey));
    });
    const provider = snsLike({ fetch: loopback, keyFailureCooldown: 200 });
    assert.equal(
      await code(verifyAt(provider, { body: snsMessage(privateKey), headers: {} })),
      'key_unavailable',
    );
    fail = false;
    // Within the cooldown the failure is remembered: refused without a request.
    assert.equal(
      await code(verifyAt(provider, { body: snsMessage(privateKey), headers: {} })),
      'key_unavailable',
    );
    assert.equal(hits.get('/SimpleNotificationService-k1.pem'), 1);
    await new Promise((resolve) => setTimeout(resolve, 250));
    await verifyAt(provider, { body: snsMessage(privateKey), headers: {} });
    assert.equal(hits.get('/SimpleNotificationService-k1.pem'), 2);
  });

  it('refuses a signature made with another key than the fetched one, and a stale message', async () => {
    const { publicKey } = rsa();
    const other = rsa();
    serve('/SimpleNotificationService-k1.pem', pem(publicKey));
    const provider = snsLike({ fetch: loopback });
    assert.equal(
      await code(verifyAt(provider, { body: snsMessage(other.privateKey), headers: {} })),
      'invalid_signature',
    );
    const stale = snsMessage(other.privateKey, {}, new Date(NOW.getTime() - 3_600_000));
    assert.equal(await code(verifyAt(provider, { body: stale, headers: {} })), 'timestamp_too_old');
  });

  it('looks a JWS key up by kid in a fetched key set, refetching once (not more) for an id it lacks', async () => {
    const k1 = ec();
    const k2 = ec();
    let set = jwks(['k1', k1.publicKey]);
    routes.set('/.well-known/jwks.json', (_req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(set);
    });
    const provider = jwksSender({ fetch: loopback, keyRefetchCooldown: 1_000 });
    const body = '{"id":"w1"}';
    await verifyAt(provider, { body, headers: { 'x-jws': jws(body, k1.privateKey, 'k1') } });
    // Within the cooldown an unknown id does not fetch again.
    set = jwks(['k1', k1.publicKey], ['k2', k2.publicKey]);
    assert.equal(
      await code(verifyAt(provider, { body, headers: { 'x-jws': jws(body, k2.privateKey, 'k2') } })),
      'unknown_key',
    );
    assert.equal(hits.get('/.well-known/jwks.json'), 1);
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    // The sender rotated in k2: past the cooldown, the first delivery naming it refetches the set.
    await verifyAt(provider, { body, headers: { 'x-jws': jws(body, k2.privateKey, 'k2') } });
    assert.equal(hits.get('/.well-known/jwks.json'), 2);
    // An id nobody published: refused, and no third request within the cooldown.
    for (let i = 0; i < 3; i++) {
      assert.equal(
        await code(verifyAt(provider, { body, headers: { 'x-jws': jws(body, k2.privateKey, 'forged') } })),
        'unknown_key',
      );
    }
    assert.equal(hits.get('/.well-known/jwks.json'), 2);
    // The key named k1 does not verify a signature made with k2.
    assert.equal(
      await code(verifyAt(provider, { body, headers: { 'x-jws': jws(body, k2.privateKey, 'k1') } })),
      'invalid_signature',
    );
  });

  it('bounds the cache: past keyCacheSize the least recently used URL is dropped and fetched again', async () => {
    const { publicKey, privateKey } = rsa();
    for (const n of [1, 2, 3]) serve(`/c${n}.pem`, pem(publicKey));
    const provider = headerNamed({ fetch: loopback, keyCacheSize: 2 });
    const url = (n: number) => `https://a.certs.example.test/c${n}.pem`;
    for (const n of [1, 2, 1, 3, 1, 2]) await verifyAt(provider, headerDelivery(privateKey, url(n)));
    // 1 and 2 fetched; 1 used again (most recent); 3 evicts 2; 1 still cached; 2 fetched again.
    assert.deepEqual([hits.get('/c1.pem'), hits.get('/c2.pem'), hits.get('/c3.pem')], [1, 2, 1]);
    assert.equal(
      await code(verifyAt(provider, headerDelivery(privateKey, 'https://certs.example.test/c1.pem'))),
      'untrusted_key_url',
    );
  });

  it('accepts an X.509 certificate and refuses an expired one (openssl-made)', async (t) => {
    let dir: string | undefined;
    try {
      execFileSync('openssl', ['version'], { stdio: 'ignore' });
    } catch {
      t.skip('openssl is not installed');
      return;
    }
    try {
      dir = mkdtempSync(join(tmpdir(), 'onceonly-cert-'));
      const make = (name: string, days: string) =>
        execFileSync(
          'openssl',
          [
            'req',
            '-x509',
            '-newkey',
            'rsa:2048',
            '-nodes',
            '-keyout',
            join(dir!, `${name}.key`),
            '-out',
            join(dir!, `${name}.pem`),
            '-days',
            days,
            '-subj',
            '/CN=sns.test',
          ],
          { stdio: 'ignore' },
        );
      make('good', '2');
      const cert = readFileSync(join(dir, 'good.pem'), 'utf8');
      const { createPrivateKey } = await import('node:crypto');
      const key = createPrivateKey(readFileSync(join(dir, 'good.key')));
      serve('/SimpleNotificationService-k1.pem', cert);
      // Real time: the certificate is valid from now for two days.
      const now = new Date();
      const provider = snsLike({ fetch: loopback });
      const good = await provider.verify({
        rawBody: Buffer.from(snsMessage(key, {}, now)),
        headers: new Headers(),
        receivedAt: now,
      });
      assert.equal(good.type, 'Notification');
      // The same certificate seen by a fetcher whose clock is three days on: expired.
      const later = new KeyFetcher(
        'snsish',
        { allowedHosts: ['sns.us-east-1.amazonaws.com'], format: 'pem' },
        {
          fetch: loopback,
          now: () => Date.now() + 3 * 86_400_000,
        },
      );
      assert.equal(await code(later.get(CERT_URL)), 'key_unavailable');
    } finally {
      if (dir) rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses, at construction, allowed hosts that would match more than they say', () => {
    for (const hosts of [[], ['*.com'], ['Example.com'], [/sns\.amazonaws\.com/], ['https://x.example']]) {
      assert.throws(
        () => new KeyFetcher('x', { allowedHosts: hosts as never, format: 'pem' }, { fetch: loopback }),
        /onceonly:/,
      );
    }
  });
});
