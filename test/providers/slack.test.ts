import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { slack } from '../../src/providers/index.js';
import { signedDelivery } from '../../src/testing/index.js';
import {
  type Delivery,
  NOW,
  oneSecret,
  providerCases,
  receiveAll,
  rejects,
  TRICKY_JSON,
  verifyAt,
} from './kit.js';

// Slack's documented algorithm: v0=hex(HMAC-SHA256(signing secret, "v0:" + ts + ":" + raw body)).
// Signed by the test kit, which sends a JSON object as application/json and a form as
// application/x-www-form-urlencoded, as Slack does.
const secret = () => randomBytes(16).toString('hex');
const body = () =>
  `{"token": "x", "team_id": "T1", "type": "event_callback", "event_id": "Ev08MFMKH6", "event_time": 1764478800, "event": {"type": "app_mention", "text": ${TRICKY_JSON}}}`;

function sign(payload: string, key: string, at: Date): Delivery {
  const d = signedDelivery('slack', { payload, secret: key, at });
  return { body: d.text, headers: { ...d.headers } };
}

describe('slack provider (signed by the test kit, signedDelivery)', () => {
  providerCases<string>({
    name: 'slack',
    credential: oneSecret(secret),
    make: (config) => slack({ secret: config }),
    body,
    sign: (payload, key, at) => sign(payload, key, at),
    expect: { dedup: 'id', id: 'Ev08MFMKH6', type: 'app_mention', typeSigned: true },
    noteOf: (event) => (event as { event: { text: unknown } }).event.text,
    toleranceMs: 5 * 60_000,
    signatureHeader: 'x-slack-signature',
    malformed: ['xoxb-123-456-abc', 'xoxp-1', 'xapp-1-A', ''],
  });

  it('keys a retry (new timestamp, X-Slack-Retry-Num) on the signed event_id: a duplicate', async () => {
    const key = secret();
    const retry = sign(body(), key, new Date(NOW.getTime() + 60_000));
    retry.headers['x-slack-retry-num'] = '1';
    const { results, runs } = await receiveAll(slack({ secret: key }), [sign(body(), key, NOW), retry]);
    assert.deepEqual(
      results.map((r) => r.outcome),
      ['processed', 'duplicate'],
    );
    assert.equal(runs, 1);
  });

  it('verifies a slash command (form fields) and keys it on the body digest', async () => {
    const key = secret();
    const form = 'command=%2Fdeploy&text=caf%C3%A9+%F0%9F%98%80&user_id=U1';
    const d = sign(form, key, NOW);
    assert.equal(d.headers['content-type'], 'application/x-www-form-urlencoded');
    const verified = await verifyAt(slack({ secret: key }), d);
    assert.equal(verified.type, 'slash_command');
    assert.equal(
      verified.typeSigned,
      true,
      'a form body without payload: the signed bytes say slash command',
    );
    assert.equal(verified.dedup, 'body');
    assert.equal((verified.event as { text: string }).text, 'café 😀');
  });

  it('verifies an interactivity payload and types it by the payload type', async () => {
    const key = secret();
    const form = `payload=${encodeURIComponent('{"type":"block_actions","actions":[]}')}`;
    const verified = await verifyAt(slack({ secret: key }), sign(form, key, NOW));
    assert.equal(verified.type, 'block_actions');
    assert.equal(verified.typeSigned, true);
  });

  it('verifies url_verification (no event_id) and keys it on the body', async () => {
    const key = secret();
    const verified = await verifyAt(
      slack({ secret: key }),
      sign('{"type":"url_verification","challenge":"c"}', key, NOW),
    );
    assert.equal(verified.type, 'url_verification');
    assert.equal(verified.typeSigned, true);
    assert.equal(verified.dedup, 'body');
  });

  it('refuses a signed JSON body sent as a form (the unsigned Content-Type must not choose its type) as invalid_body', async () => {
    const key = secret();
    // A captured JSON delivery whose signed text holds form syntax: read as a form it would be an
    // interactivity payload of the replayer's choosing, or a slash command.
    const smuggled = encodeURIComponent('{"type":"block_actions","actions":[]}');
    for (const json of [
      '{"type":"url_verification","challenge":"c"}',
      ` {"type":"event_callback","event_id":"Ev1","event":{"type":"message","text":"a&payload=${smuggled}&b"}}`,
    ]) {
      const d = sign(json, key, NOW);
      await verifyAt(slack({ secret: key }), d);
      await rejects(
        slack({ secret: key }),
        { ...d, headers: { ...d.headers, 'content-type': 'application/x-www-form-urlencoded' } },
        'invalid_body',
      );
    }
  });

  it('rejects an event_callback without event_id as missing_event_id', async () => {
    const key = secret();
    await rejects(
      slack({ secret: key }),
      sign('{"type":"event_callback","event":{"type":"x"}}', key, NOW),
      'missing_event_id',
    );
  });

  it('defaults retention to 1 day (3 retries within minutes)', () => {
    assert.equal(slack({ secret: secret() }).retentionMs, 86_400_000);
  });
});
