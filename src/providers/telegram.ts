import type { Duration } from '../core/duration.js';
import { VerificationError } from '../errors.js';
import { token } from './families/token.js';
import { parseJsonObject, type SecretInput } from './shared.js';
import type { AuthenticatingProvider, DeliveryInput, Verified } from './types.js';

/**
 * A Telegram Bot API update: `update_id` and one optional field (`message`, `callback_query`...).
 * For the typed update, pass `@grammyjs/types`' `Update` (see {@link telegram}).
 */
export interface TelegramEvent {
  update_id: number;
  [field: string]: unknown;
}

/**
 * The event map for typed `on` handlers: each kind of update (every field of `E` besides
 * `update_id`: `message`, `callback_query`...) maps to `E` with that field present. A type with an
 * index signature (the default {@link TelegramEvent}) maps any name to `E`.
 *
 * @example
 * // TelegramEventMap<Update>['callback_query'] is Update & { callback_query: CallbackQuery }
 */
export type TelegramEventMap<E> = string extends keyof E
  ? Record<string, E>
  : { [K in Exclude<keyof E, 'update_id'> & string]-?: E & { [P in K]-?: NonNullable<E[P]> } };

export interface TelegramOptions {
  /**
   * The `secret_token` passed to `setWebhook` (1-256 of `A-Z a-z 0-9 _ -`); an array while rotating.
   * @example process.env.TELEGRAM_WEBHOOK_SECRET!
   */
  secret: SecretInput;
  /**
   * How long a completed update id is remembered. Telegram keeps an unconfirmed update for up to
   * 24 hours and retries it meanwhile; 2 days leaves a margin.
   * @default '2d'
   */
  retention?: Duration;
}

const SECRET = /^[A-Za-z0-9_-]{1,256}$/;
const BOT_TOKEN = /^[0-9]+:[A-Za-z0-9_-]{20,}$/;

/** The update's kind is its one field besides `update_id`: `message`, `callback_query`... */
function describe(input: DeliveryInput): Verified<TelegramEvent> {
  const update = parseJsonObject(input.rawBody);
  const id = update.update_id;
  if (typeof id !== 'number' || !Number.isSafeInteger(id)) {
    throw new VerificationError(
      'missing_event_id',
      'onceonly: the telegram update has no integer update_id; Telegram always sends one, so this delivery is refused',
    );
  }
  let type: string | undefined;
  for (const key in update) {
    if (key !== 'update_id') {
      type = key;
      break;
    }
  }
  // The token vouches for the sender, not the bytes; update_id is Telegram's own id for the update.
  return { event: update as TelegramEvent, type, typeSigned: false, id: String(id), dedup: 'id' };
}

const declaration = token({
  name: 'telegram',
  retention: '2d',
  secret: {
    expected: 'the secret_token you passed to setWebhook (not the bot token)',
    refuse: (s) =>
      BOT_TOKEN.test(s)
        ? 'the telegram secret looks like a bot token; pass the secret_token given to setWebhook instead'
        : SECRET.test(s)
          ? undefined
          : 'the telegram secret_token must be 1-256 characters of A-Z, a-z, 0-9, _ and -',
  },
  token: { header: 'x-telegram-bot-api-secret-token' },
  describe,
});

/**
 * Telegram Bot API: the `secret_token` given to `setWebhook`, sent as it is in
 * `X-Telegram-Bot-Api-Secret-Token` and compared in constant time. Dedup keys on `update_id`; the
 * type is the update's kind (`message`, `callback_query`...). The token vouches for the sender,
 * never for the body.
 *
 * @example
 * createReceiver({ provider: telegram({ secret: process.env.TELEGRAM_WEBHOOK_SECRET! }), store, on: { message: reply } });
 *
 * Pass the Bot API's `Update` from `@grammyjs/types` (types only) for handlers typed by kind, the
 * kind's field present:
 *
 * @example
 * import type { Update } from '@grammyjs/types';
 * createReceiver({
 *   provider: telegram<Update>({ secret: process.env.TELEGRAM_WEBHOOK_SECRET! }),
 *   store,
 *   on: { callback_query: ({ event }) => answer(event.callback_query.id) },
 * });
 */
export function telegram<E = TelegramEvent>(
  options: TelegramOptions,
): AuthenticatingProvider<E, TelegramEventMap<E>> {
  return declaration(options) as AuthenticatingProvider<E, TelegramEventMap<E>>;
}
