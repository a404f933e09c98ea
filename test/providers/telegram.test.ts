import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { telegram } from '../../src/providers/index.js';
import { signedDelivery } from '../../src/testing/index.js';
import { type Delivery, rejects, TRICKY_JSON, verifyAt } from './kit.js';
import { tokenProviderCases } from './tokenCases.js';

// Telegram's documented scheme (https://core.telegram.org/bots/api#setwebhook): the secret_token
// given to setWebhook, sent as it is in X-Telegram-Bot-Api-Secret-Token (as the kit's signedDelivery
// sends it).
const token = () => randomBytes(24).toString('base64url');
const BODY = `{"update_id": 10000, "message": {"message_id": 1365, "date": 1764478800, "chat": {"id": 1111111, "type": "private"}, "text": ${TRICKY_JSON}}}`;

function deliver(t: string, body = BODY): Delivery {
  const d = signedDelivery('telegram', { payload: body, secret: t });
  return { body: d.text, headers: { ...d.headers } };
}

describe('telegram provider (secret token, as the Bot API sends it)', () => {
  tokenProviderCases({
    name: 'telegram',
    token,
    make: (secret) => telegram({ secret }),
    deliver,
    header: 'x-telegram-bot-api-secret-token',
    expect: { dedup: 'id', id: '10000', type: 'message' },
    lookalikes: ['123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw', 'has space', 'bad!char'],
    retentionMs: 2 * 86_400_000,
  });

  it('types each update by its kind, and refuses an update without an integer update_id', async () => {
    const t = token();
    const callback = await verifyAt(
      telegram({ secret: t }),
      deliver(t, '{"update_id": 10001, "callback_query": {"id": "4382bfdwdsb323b2d9", "data": "x"}}'),
    );
    assert.equal(callback.type, 'callback_query');
    assert.equal(callback.id, '10001');
    await rejects(telegram({ secret: t }), deliver(t, '{"message": {"text": "hi"}}'), 'missing_event_id');
    await rejects(
      telegram({ secret: t }),
      deliver(t, '{"update_id": "10002", "message": {}}'),
      'missing_event_id',
    );
  });
});
