/**
 * Hostile input through the RECEIVER (test/providers/hostile.test.ts covers `verify` alone): for
 * every provider, fast-check builds deliveries with missing, duplicated and oddly cased headers,
 * several and malformed signatures, huge header values, empty, binary and invalid UTF-8 bodies, and
 * JSON with duplicate keys and deep nesting, through both `fetch(Request)` and `receive()`. Property:
 * a 4xx with a stable code, no store access (spy store), no handler run, no secret or stack trace
 * in the response, no crash. FUZZ_RUNS sets the cases per provider (default 300).
 */
import { strict as assert } from 'node:assert';
import { createHmac, generateKeyPairSync, randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { Store } from '../../src/core/types.js';
import * as p from '../../src/providers/index.js';
import type { Provider } from '../../src/providers/types.js';
import { toResponse } from '../../src/receiver/http.js';
import { createReceiver } from '../../src/receiver/receiver.js';
import { memoryStore } from '../../src/stores/memory.js';
import { wrapStore } from '../support/wrap-store.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 300);

const hex = randomBytes(16).toString('hex');
const b64 = randomBytes(24).toString('base64');
const ec = generateKeyPairSync('ec', { namedCurve: 'prime256v1' })
  .publicKey.export({ type: 'spki', format: 'der' })
  .toString('base64');
const ed = generateKeyPairSync('ed25519')
  .publicKey.export({ type: 'spki', format: 'der' })
  .subarray(-32)
  .toString('hex');

// Each provider with the secret it holds (must never show up in a response) and the headers it reads.
const cases: [Provider<any, any>, string, string[]][] = [
  [p.stripe({ secret: `whsec_${hex}` }), hex, ['stripe-signature']],
  [
    p.standardWebhooks({ secret: `whsec_${b64}` }),
    b64,
    ['webhook-id', 'webhook-timestamp', 'webhook-signature'],
  ],
  [
    p.github({ secret: hex }),
    hex,
    ['x-hub-signature-256', 'x-github-event', 'x-github-delivery', 'content-type'],
  ],
  [p.shopify({ secret: hex }), hex, ['x-shopify-hmac-sha256', 'x-shopify-webhook-id', 'x-shopify-topic']],
  [p.slack({ secret: hex }), hex, ['x-slack-signature', 'x-slack-request-timestamp', 'content-type']],
  [p.paddle({ secret: hex }), hex, ['paddle-signature']],
  [p.linear({ secret: hex }), hex, ['linear-signature', 'linear-delivery']],
  [p.square({ secret: hex }), hex, ['x-square-hmacsha256-signature']],
  [p.lemonSqueezy({ secret: hex }), hex, ['x-signature', 'x-event-name']],
  [p.intercom({ secret: hex }), hex, ['x-hub-signature']],
  [p.zoom({ secret: hex }), hex, ['x-zm-signature', 'x-zm-request-timestamp']],
  [
    p.twilio({ secret: hex }),
    hex,
    ['x-twilio-signature', 'x-twilio-webhooks-signature-settings', 'content-type'],
  ],
  [
    p.sendgrid({ publicKey: ec }),
    ec,
    ['x-twilio-email-event-webhook-signature', 'x-twilio-email-event-webhook-timestamp'],
  ],
  [p.discord({ publicKey: ed }), ed, ['x-signature-ed25519', 'x-signature-timestamp']],
  [p.mailgun({ secret: hex }), hex, ['content-type']],
];

const now = () => String(Math.floor(Date.now() / 1000));
const hex64 = fc.stringMatching(/^[0-9a-f]{64}$/);
const base64ish = fc.base64String({ minLength: 4, maxLength: 64 });

// Header values, biased towards the shapes providers parse: signatures (one, several, malformed),
// fresh timestamps so verification reaches the signature compare, huge and latin-1 values.
const headerValue = fc.oneof(
  fc.stringMatching(/^[\x20-\x7e]{0,80}$/),
  fc.stringMatching(/^[\x20-\x7e\x80-\xff]{1,40}$/),
  fc.constant('').map(() => now()),
  fc
    .array(hex64, { minLength: 1, maxLength: 4 })
    .map((s) => `t=${now()},${s.map((v) => `v1=${v}`).join(',')}`),
  fc.array(base64ish, { minLength: 1, maxLength: 4 }).map((s) => s.map((v) => `v1,${v}`).join(' ')),
  fc.array(hex64, { minLength: 1, maxLength: 3 }).map((s) => s.map((v) => `sha256=${v}`).join(',')),
  fc.array(hex64, { minLength: 1, maxLength: 3 }).map((s) => `ts=${now()};h1=${s.join(',')}`),
  hex64.map((v) => `v0=${v}`),
  base64ish,
  fc.constantFrom('t=,v1=', 'v1,', 'sha256=', '=', ',,,', 't=abc,v1=zz', 'v1=;v1=', 'application/json'),
  fc.constantFrom('application/x-www-form-urlencoded', 'multipart/form-data; boundary=x'),
  fc.integer({ min: 8_000, max: 60_000 }).map((n) => `v1=${'f'.repeat(n)}`),
  fc.integer({ min: 8_000, max: 60_000 }).map((n) => 'a'.repeat(n)),
);

const enc = new TextEncoder();
const body = fc.oneof(
  fc.constant(new Uint8Array(0)),
  fc.uint8Array({ maxLength: 512 }),
  fc
    .uint8Array({ maxLength: 64 })
    .map((b) => Uint8Array.from([0x7b, 0xff, 0xc3, 0x28, ...b, 0xed, 0xa0, 0x80])),
  fc.json().map((j) => enc.encode(j)),
  fc
    .tuple(fc.string(), fc.string(), fc.string())
    .map(([a, b, t]) =>
      enc.encode(
        `{"id":${JSON.stringify(a)},"id":${JSON.stringify(b)},"type":${JSON.stringify(t)},"type":"x","data":{},"data":[]}`,
      ),
    ),
  fc.integer({ min: 100, max: 20_000 }).map((n) => enc.encode(`${'['.repeat(n)}${']'.repeat(n)}`)),
  fc
    .integer({ min: 100, max: 5_000 })
    .map((n) => enc.encode(`{"id":"evt_1","type":"t","data":${'{"a":'.repeat(n)}1${'}'.repeat(n)}}`)),
  fc
    .string()
    .map((s) => enc.encode(`payload=${encodeURIComponent(s)}&signature=${s}&timestamp=${now()}&token=x`)),
);

/** How one header is sent: absent, once, twice (duplicated), or under an oddly cased name. */
const headerShape = fc.record({
  mode: fc.constantFrom('absent', 'once', 'twice', 'cased'),
  value: headerValue,
  second: headerValue,
  caseSeed: fc.array(fc.boolean(), { minLength: 64, maxLength: 64 }),
});

const oddCase = (name: string, seed: boolean[]) =>
  [...name].map((c, i) => (seed[i % seed.length] ? c.toUpperCase() : c)).join('');

const STABLE_CODES = new Set([
  'missing_header',
  'malformed_header',
  'timestamp_too_old',
  'timestamp_too_new',
  'invalid_signature',
  'invalid_body',
  'missing_event_id',
  'body_too_large',
]);

function spyStore(calls: string[]): Store {
  const touch = (name: string) => () => {
    calls.push(name);
    return Promise.reject(new Error('the spy store must not be reached'));
  };
  return {
    claim: touch('claim'),
    confirm: touch('confirm'),
    release: touch('release'),
    extend: touch('extend'),
    record: touch('record'),
    advance: touch('advance'),
    inspect: touch('inspect'),
    close: async () => {},
  };
}

describe('hostile deliveries through the receiver, every provider', () => {
  for (const [provider, secret, names] of cases) {
    it(`${provider.name}: a typed 4xx, no store access, no handler run, nothing leaked (${RUNS} cases)`, async () => {
      const calls: string[] = [];
      let handled = 0;
      const receiver = createReceiver({
        provider,
        store: spyStore(calls),
        handler: () => {
          handled++;
        },
      });
      await fc.assert(
        fc.asyncProperty(
          body,
          fc.array(headerShape, { minLength: names.length, maxLength: names.length }),
          fc.boolean(),
          async (raw, shapes, viaFetch) => {
            const pairs: [string, string][] = [];
            names.forEach((name, i) => {
              const s = shapes[i]!;
              if (s.mode === 'absent') return;
              const sent = s.mode === 'cased' ? oddCase(name, s.caseSeed) : name;
              pairs.push([sent, s.value]);
              if (s.mode === 'twice') pairs.push([sent, s.second]);
            });
            const url = 'https://example.com/hooks/in?x=1';
            let status: number;
            let code: string | undefined;
            let text: string;
            if (viaFetch) {
              const headers = new Headers();
              for (const [n, v] of pairs) headers.append(n, v);
              const res = await receiver.fetch(new Request(url, { method: 'POST', headers, body: raw }));
              status = res.status;
              text = await res.text();
              code = (JSON.parse(text) as { code?: string }).code;
            } else {
              // Node's IncomingHttpHeaders shape: raw casing, duplicates as arrays.
              const headers: Record<string, string | string[]> = {};
              for (const [n, v] of pairs) {
                const prev = headers[n];
                headers[n] = prev === undefined ? v : [...(Array.isArray(prev) ? prev : [prev]), v];
              }
              const result = await receiver.receive({ rawBody: raw, headers, url });
              status = result.status;
              code = result.code;
              text = await toResponse(result).text();
              assert.ok(['rejected', 'too-large'].includes(result.outcome), result.outcome);
            }
            assert.ok(status >= 400 && status < 500, `status ${status}: ${text}`);
            assert.ok(code !== undefined && STABLE_CODES.has(code), `code ${code}`);
            assert.deepEqual(calls, [], 'the store was reached');
            assert.equal(handled, 0, 'the handler ran');
            assert.ok(!text.includes(secret), 'the secret is in the response');
            assert.ok(!/\n\s+at |\.ts:\d|node_modules/.test(text), `a stack trace in the response: ${text}`);
          },
        ),
        { numRuns: RUNS },
      );
    });
  }
});

// The same hostile bodies, correctly signed, so they get past verification into parsing and keying.
const signers: [string, Provider<any, any>, string, (raw: Uint8Array) => Record<string, string>][] = (() => {
  const mac = (key: string | Buffer, ...parts: (string | Uint8Array)[]) => {
    const h = createHmac('sha256', key);
    for (const part of parts) h.update(part);
    return h;
  };
  const stripeSecret = `whsec_${hex}`;
  const swKey = randomBytes(24);
  const ghSecret = randomBytes(20).toString('hex');
  const slackSecret = randomBytes(16).toString('hex');
  return [
    [
      'stripe',
      p.stripe({ secret: stripeSecret }),
      stripeSecret,
      (raw) => {
        const t = now();
        return { 'stripe-signature': `t=${t},v1=${mac(stripeSecret, `${t}.`, raw).digest('hex')}` };
      },
    ],
    [
      'standardWebhooks',
      p.standardWebhooks({ secret: `whsec_${swKey.toString('base64')}` }),
      swKey.toString('base64'),
      (raw) => {
        const t = now();
        const id = `msg_${randomBytes(6).toString('hex')}`;
        return {
          'webhook-id': id,
          'webhook-timestamp': t,
          'webhook-signature': `v1,${mac(swKey, `${id}.${t}.`, raw).digest('base64')}`,
        };
      },
    ],
    [
      'github',
      p.github({ secret: ghSecret }),
      ghSecret,
      (raw) => ({
        'x-hub-signature-256': `sha256=${mac(ghSecret, raw).digest('hex')}`,
        'x-github-event': 'push',
        'x-github-delivery': randomBytes(8).toString('hex'),
      }),
    ],
    [
      'slack',
      p.slack({ secret: slackSecret }),
      slackSecret,
      (raw) => {
        const t = now();
        return {
          'x-slack-signature': `v0=${mac(slackSecret, `v0:${t}:`, raw).digest('hex')}`,
          'x-slack-request-timestamp': t,
        };
      },
    ],
  ];
})();

const signedBody = fc.oneof(
  body,
  // Objects that parse, some with an id: they must be keyed and processed, never crash.
  fc
    .record({
      id: fc.oneof(fc.string(), fc.integer(), fc.constant(null)),
      type: fc.string(),
      data: fc.jsonValue(),
    })
    .map((o) => enc.encode(JSON.stringify(o))),
  fc
    .integer({ min: 1_000, max: 60_000 })
    .map((n) => enc.encode(JSON.stringify({ id: 'evt_big', type: 't', note: 'é'.repeat(n) }))),
);

/** The memory store, counting the calls that reach it. */
function countingStore(calls: string[]): Store {
  return wrapStore(memoryStore(), (name) => {
    calls.push(name);
  });
}

describe('hostile bodies, correctly signed, through the receiver', () => {
  for (const [name, provider, secret, sign] of signers) {
    it(`${name}: a typed 4xx that touches nothing, or keyed and handled once; never a crash or a 5xx (${RUNS} cases)`, async () => {
      const calls: string[] = [];
      const runs = new Map<string, number>();
      const receiver = createReceiver({
        provider,
        store: countingStore(calls),
        maxBodyBytes: 256 * 1024,
        handler: ({ key }) => {
          runs.set(String(key), (runs.get(String(key)) ?? 0) + 1);
        },
        onOutcome: () => {},
      });
      await fc.assert(
        fc.asyncProperty(signedBody, fc.boolean(), async (raw, viaFetch) => {
          calls.length = 0;
          const headers = { 'content-type': 'application/json', ...sign(raw) };
          const url = 'https://example.com/hooks/in';
          const result = viaFetch ? undefined : await receiver.receive({ rawBody: raw, headers, url });
          const res = viaFetch
            ? await receiver.fetch(new Request(url, { method: 'POST', headers, body: raw }))
            : toResponse(result!);
          const text = await res.text();
          assert.ok(res.status < 500, `status ${res.status}: ${text}`);
          assert.ok(!text.includes(secret), 'the secret is in the response');
          assert.ok(!/\n\s+at |\.ts:\d|node_modules/.test(text), `a stack trace in the response: ${text}`);
          const outcome = res.headers.get('onceonly-outcome');
          if (outcome === 'conflict') {
            // An id seen before with another body: the store was asked, the handler was not run.
            assert.equal(res.status, 422);
            assert.equal(JSON.parse(text).code, 'fingerprint_mismatch');
            assert.deepEqual(calls, ['claim']);
          } else if (res.status >= 400) {
            assert.equal(outcome, res.status === 413 ? 'too-large' : 'rejected');
            assert.ok(STABLE_CODES.has(String(JSON.parse(text).code)), text);
            assert.deepEqual(calls, [], 'a refused delivery reached the store');
          } else {
            assert.ok(
              ['processed', 'duplicate', 'unkeyed', 'ignored'].includes(String(outcome)),
              String(outcome),
            );
          }
        }),
        { numRuns: RUNS },
      );
      // Whatever was keyed ran once per key.
      assert.deepEqual(
        [...runs.values()].filter((n) => n !== 1),
        [],
      );
    });
  }
});
