/**
 * The key fetcher's bounds over time, on a clock the test moves: a slow flood that keeps the
 * per-minute bucket empty must not lock out the sender whose keys verified deliveries once those
 * keys are due again, and a wall clock set back (NTP, a resumed VM) must neither drain the bucket
 * nor stretch a cooldown by the size of its step. Counted at the fetcher's injected `fetch`.
 */
import { strict as assert } from 'node:assert';
import { generateKeyPairSync } from 'node:crypto';
import { describe, it } from 'node:test';
import {
  type FetchedKeyOptions,
  type KeyFetch,
  KeyFetcher,
} from '../../../src/providers/families/fetchedKeys.js';
import { code } from '../kit.js';

const HOUR = 3_600_000;
const url = (name: string) => `https://a.certs.example.test/${name}.pem`;
const realPem = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  .publicKey.export({ format: 'pem', type: 'spki' })
  .toString();

/** A fetcher on a clock the test sets, over a counted key server that holds only `real`. */
function fixture(options: Pick<FetchedKeyOptions, 'keyCacheTtl' | 'keyFailureCooldown'> = {}) {
  let now = Date.UTC(2026, 11, 4, 12);
  const counts = new Map<string, number>();
  let serverDown = false;
  const fetch: KeyFetch = async (u) => {
    counts.set(u, (counts.get(u) ?? 0) + 1);
    const ok = u === url('real') && !serverDown;
    return new Response(ok ? realPem : 'not found', { status: ok ? 200 : 404 }) as Awaited<
      ReturnType<KeyFetch>
    >;
  };
  const fetcher = new KeyFetcher(
    'certheader',
    { allowedHosts: ['*.certs.example.test'], format: 'pem' },
    { fetch, now: () => now, ...options },
  );
  return {
    fetcher,
    counts,
    advance: (ms: number) => {
      now += ms;
    },
    down: (value: boolean) => {
      serverDown = value;
    },
    total: () => [...counts.values()].reduce((a, b) => a + b, 0),
  };
}

/**
 * Forged URLs, each fetched and failing, until the bucket (10 a minute by default) refuses one
 * without a request: the bucket is then empty.
 */
async function drain(f: ReturnType<typeof fixture>, tag: string): Promise<void> {
  for (let i = 0; i <= 10; i++) {
    const before = f.total();
    assert.equal(await code(f.fetcher.get(url(`${tag}-${i}`))), 'key_unavailable');
    if (f.total() === before) return;
  }
  assert.fail('11 forged URLs were all fetched: the bucket never ran dry');
}

describe('key fetching on a moving clock', () => {
  it('a slow flood that keeps the bucket empty still lets verified keys be fetched again when due', async () => {
    const f = fixture({ keyCacheTtl: '1h' });
    assert.equal(await code(f.fetcher.get(url('real'))), 'ok');
    f.fetcher.trust(url('real'));
    // Ten forged URLs a minute, for the whole hour the real keys are cached: the bucket stays empty.
    for (let minute = 0; minute < 60; minute++) {
      await drain(f, `m${minute}`);
      f.advance(60_000);
    }
    // The real keys are at their TTL, and the bucket is as empty as the flood keeps it.
    await drain(f, 'last');
    assert.equal(await code(f.fetcher.get(url('real'))), 'ok', 'the verified URL is fetched again');
    assert.equal(f.counts.get(url('real')), 2, 'by a request: it was due, not served stale');
  });

  it('a key id a verified set lacks refetches it past the bounds, once per keyRefetchCooldown', async () => {
    const f = fixture();
    await f.fetcher.get(url('real'));
    f.fetcher.trust(url('real'));
    f.advance(31_000);
    await drain(f, 'flood');
    assert.equal(await code(f.fetcher.get(url('real'), true)), 'ok');
    assert.equal(f.counts.get(url('real')), 2, 'the refresh was fetched while the bucket was empty');
    assert.equal(await code(f.fetcher.get(url('real'), true)), 'ok');
    assert.equal(f.counts.get(url('real')), 2, 'a second refresh within the cooldown is served cached');
  });

  it('a clock set back an hour neither drains the bucket nor holds it empty', async () => {
    const f = fixture();
    await drain(f, 'before');
    f.advance(-HOUR);
    assert.equal(await code(f.fetcher.get(url('stepped'))), 'key_unavailable');
    // One token's worth of time from where the clock now is: 6 s at 10 a minute.
    f.advance(6_100);
    const before = f.total();
    assert.equal(await code(f.fetcher.get(url('after'))), 'key_unavailable');
    assert.equal(f.total() - before, 1, 'the bucket refilled one request: the request was made');
  });

  it('a clock set back an hour does not stretch a failure cooldown by an hour', async () => {
    const f = fixture({ keyFailureCooldown: '10s' });
    f.down(true);
    assert.equal(await code(f.fetcher.get(url('real'))), 'key_unavailable');
    assert.equal(await code(f.fetcher.get(url('real'))), 'key_unavailable');
    assert.equal(f.counts.get(url('real')), 1, 'the failure is remembered for the cooldown');
    f.down(false);
    f.advance(-HOUR);
    assert.equal(await code(f.fetcher.get(url('real'))), 'ok');
    assert.equal(f.counts.get(url('real')), 2, 'asked again: the cooldown did not become an hour');
  });

  it('a clock set back an hour does not hold off a verified set refresh for an hour', async () => {
    const f = fixture();
    await f.fetcher.get(url('real'));
    f.fetcher.trust(url('real'));
    f.advance(-HOUR);
    assert.equal(await code(f.fetcher.get(url('real'), true)), 'ok');
    assert.equal(f.counts.get(url('real')), 2, 'the refresh was made');
  });

  it('the default failure cooldown is shorter than AWS SNS retry interval of 20 s', async () => {
    const f = fixture();
    f.down(true);
    assert.equal(await code(f.fetcher.get(url('real'))), 'key_unavailable');
    f.down(false);
    f.advance(20_000);
    assert.equal(await code(f.fetcher.get(url('real'))), 'ok', "SNS's next retry gets its key");
    assert.equal(f.counts.get(url('real')), 2);
  });
});
