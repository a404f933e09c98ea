/**
 * The demo's API effect (`--effects api` and `api-naive`): the handler charges its event at the
 * payments API (demo/payments.ts). `api` does it as the docs say (docs/idempotency-keys.md): inside
 * `ctx.step('charge', ...)` with the step's idempotency key. `api-naive` is the same handler written
 * without either: a plain call, no key.
 *
 * The chaos's kills land between the call and the end of the run, where neither the claim nor the
 * ledger can help: with the answer's headers in and its body unread (`answer-unread`), with the
 * answer read and not yet kept by the step (`answer-read`), and after the step returned
 * (`after-charge`). The key covers the first two, the step the third; the naive handler charges again
 * after any of them.
 */
import type { HandlerContext } from '../../receiver/types.js';
import { type ChargeResult, postCharge } from './payments.js';

export type DemoEffects = 'ledger' | 'api' | 'api-naive';
export const EFFECTS: readonly DemoEffects[] = ['ledger', 'api', 'api-naive'];

/** Where a kill lands in a run that calls the API. */
export type ChargeKill = 'answer-unread' | 'answer-read' | 'after-charge';
export const CHARGE_KILLS: readonly ChargeKill[] = ['answer-unread', 'answer-read', 'after-charge'];

/**
 * Charges `event` as the handler of `effects` does, calling `kill(at)` at `at` when given (a kill
 * refused returns, and the run goes on).
 */
export async function chargeEvent(
  ctx: Pick<HandlerContext<unknown>, 'step' | 'signal'>,
  effects: 'api' | 'api-naive',
  url: string,
  event: string,
  at: ChargeKill | undefined,
  kill: (at: ChargeKill) => Promise<void>,
): Promise<ChargeResult> {
  const call = async (idempotencyKey: string | undefined, signal: AbortSignal) => {
    const charge = await postCharge(url, event, {
      idempotencyKey,
      signal,
      onCharged: at === 'answer-unread' ? () => kill('answer-unread') : undefined,
    });
    if (at === 'answer-read') await kill('answer-read');
    return charge;
  };
  const charge =
    effects === 'api'
      ? await ctx.step('charge', ({ idempotencyKey, signal }) => call(idempotencyKey, signal))
      : await call(undefined, ctx.signal);
  if (at === 'after-charge') await kill('after-charge');
  return charge;
}
