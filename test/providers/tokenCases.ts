/**
 * The behaviours every shared-token provider must show (GitLab, Postmark, Telegram): the token
 * vouches for the sender and never for the body, so the signature cases of `kit.ts` (a tampered
 * body is refused) do not apply; these do.
 */
import { strict as assert } from 'node:assert';
import { it } from 'node:test';
import { ConfigError } from '../../src/index.js';
import type { Provider } from '../../src/providers/types.js';
import { acceptsBoth, type Delivery, receiveAll, rejectsBoth, withHeader } from './kit.js';

export interface TokenProviderSpec {
  name: string;
  /** A fresh token as the sender's settings hold it. */
  token(): string;
  make(secret: string | string[]): Provider<any, any>;
  /** A delivery carrying `token`, as the sender sends it. */
  deliver(token: string, body?: string): Delivery;
  /** The header the token travels in. */
  header: string;
  expect: { dedup: 'id' | 'body'; id?: string; type?: string };
  /** Other credentials of the sender, refused at construction. */
  lookalikes: string[];
  retentionMs: number;
}

export function tokenProviderCases(spec: TokenProviderSpec): void {
  it('accepts a delivery carrying the configured token', async () => {
    const t = spec.token();
    const verified = await acceptsBoth(spec.make(t), spec.deliver(t));
    assert.equal(verified.dedup, spec.expect.dedup);
    if ('id' in spec.expect) assert.equal(verified.id, spec.expect.id);
    if ('type' in spec.expect) assert.equal(verified.type, spec.expect.type);
    assert.equal(verified.typeSigned ?? false, false, 'a token signs no type');
  });

  it('refuses another token as invalid_token, and a missing one as missing_header', async () => {
    const t = spec.token();
    await rejectsBoth(spec.make(t), spec.deliver(spec.token()), 'invalid_token');
    await rejectsBoth(spec.make(t), withHeader(spec.deliver(t), spec.header, undefined), 'missing_header');
  });

  it('refuses every single-character change to the token', async () => {
    const t = spec.token();
    const provider = spec.make(t);
    for (const i of [0, Math.floor(t.length / 2), t.length - 1]) {
      const changed = t.slice(0, i) + (t[i] === 'a' ? 'b' : 'a') + t.slice(i + 1);
      await rejectsBoth(provider, spec.deliver(changed), 'invalid_token');
    }
    await rejectsBoth(provider, spec.deliver(t.slice(0, -1)), 'invalid_token');
    await rejectsBoth(provider, spec.deliver(`${t}x`), 'invalid_token');
  });

  it('accepts either token while rotating', async () => {
    const [a, b] = [spec.token(), spec.token()];
    const provider = spec.make([b, a]);
    await acceptsBoth(provider, spec.deliver(a));
    await acceptsBoth(provider, spec.deliver(b));
  });

  it("refuses the sender's other credentials and an empty token at construction", () => {
    for (const bad of [...spec.lookalikes, '', '   ']) {
      assert.throws(
        () => spec.make(bad),
        (error: unknown) => error instanceof ConfigError && error.code === 'invalid_secret',
        `secret ${JSON.stringify(bad.slice(0, 12))} should be refused`,
      );
    }
  });

  it('never lets a wrong token reach the handler, and a repeated delivery runs once', async () => {
    const t = spec.token();
    const wrong = await receiveAll(spec.make(t), [spec.deliver(spec.token())]);
    assert.equal(wrong.results[0]?.outcome, 'rejected');
    assert.equal(wrong.results[0]?.code, 'invalid_token');
    assert.equal(wrong.runs, 0);
    const twice = await receiveAll(spec.make(t), [spec.deliver(t), spec.deliver(t)]);
    assert.deepEqual(
      twice.results.map((r) => r.outcome),
      ['processed', 'duplicate'],
    );
    assert.equal(twice.runs, 1);
    assert.ok(twice.results[0]?.key?.startsWith(`${spec.name}:`));
  });

  it('never echoes the token in a rejection message', async () => {
    const [t, offered] = [spec.token(), spec.token()];
    const d = spec.deliver(offered);
    await assert.rejects(
      async () =>
        spec.make(t).verify({
          rawBody: new TextEncoder().encode(d.body as string),
          headers: new Headers(d.headers),
          receivedAt: new Date(),
        }),
      (error: unknown) => {
        const message = String((error as Error).message);
        assert.ok(!message.includes(t) && !message.includes(offered), message);
        return true;
      },
    );
  });

  it(`defaults retention to ${spec.retentionMs / 86_400_000} days`, () => {
    assert.equal(spec.make(spec.token()).retentionMs, spec.retentionMs);
  });
}
