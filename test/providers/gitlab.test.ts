import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { gitlab } from '../../src/providers/index.js';
import { signedDelivery } from '../../src/testing/index.js';
import { type Delivery, receiveAll, TRICKY_JSON, verifyAt, withHeader } from './kit.js';
import { tokenProviderCases } from './tokenCases.js';

// GitLab's documented scheme (https://docs.gitlab.com/user/project/integrations/webhooks/#secret-token):
// the secret token sent as it is in X-Gitlab-Token; X-Gitlab-Event and X-Gitlab-Event-UUID beside it
// (the kit's signedDelivery sends them as GitLab does).
const token = () => randomBytes(18).toString('base64url');
const BODY = `{"object_kind": "push", "ref": "refs/heads/main", "commits": [{"message": ${TRICKY_JSON}}]}`;

function deliver(t: string, body = BODY): Delivery {
  const d = signedDelivery('gitlab', {
    payload: body,
    secret: t,
    type: 'Push Hook',
    id: '13792a34-cac6-4fda-95a8-c58e00a3954e',
  });
  return { body: d.text, headers: { ...d.headers } };
}

describe('gitlab provider (shared token, as GitLab sends it)', () => {
  tokenProviderCases({
    name: 'gitlab',
    token,
    make: (secret) => gitlab({ secret }),
    deliver,
    header: 'x-gitlab-token',
    expect: { dedup: 'body', id: '13792a34-cac6-4fda-95a8-c58e00a3954e', type: 'Push Hook' },
    lookalikes: ['glpat-xxxxxxxxxxxxxxxxxxxx', 'gldt-abc', 'glptt-abc', 'glrt-abc', 'gloas-abc'],
    retentionMs: 3 * 86_400_000,
  });

  it('catches a replay with a fresh X-Gitlab-Event-UUID as a duplicate', async () => {
    const t = token();
    const first = deliver(t);
    const { results, runs } = await receiveAll(gitlab({ secret: t }), [
      first,
      withHeader(first, 'x-gitlab-event-uuid', 'fresh-uuid'),
    ]);
    assert.deepEqual(
      results.map((r) => r.outcome),
      ['processed', 'duplicate'],
    );
    assert.equal(runs, 1);
  });

  it('reads the body exactly (multibyte text and escapes)', async () => {
    const t = token();
    const verified = await verifyAt(gitlab({ secret: t }), deliver(t));
    assert.equal(
      (verified.event as { commits: { message: string }[] }).commits[0]?.message.startsWith('café'),
      true,
    );
  });
});
