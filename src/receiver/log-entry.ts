/** The log line of a delivery's result: which outcomes are logged, at which level, in what words. */
import { causeOf } from '../core/logger.js';
import { StoreMisconfiguredError } from '../errors.js';
import type { DeliveryResult } from './result.js';

/**
 * One line for the outcomes that must never pass unseen (lease lost, conflict, degraded, a body
 * another parser consumed), or undefined. Names the key and attempt, never a secret or body.
 * The receiver's `logger` gets these lines (at `warn`) and also those of {@link logEntryFor}.
 */
export function warningFor(result: DeliveryResult): string | undefined {
  const entry = logEntryFor(result);
  return entry?.level === 'warn' || result.code === 'body_already_parsed' ? entry?.message : undefined;
}

/**
 * The log line for a result and its level, or undefined for outcomes that need none (processed,
 * duplicate, in-flight, ignored, plain rejections of bad input). Names the receiver, key and
 * attempt and the cause, never a body, signature or secret.
 */
export function logEntryFor(
  result: DeliveryResult,
): { level: 'warn' | 'error'; message: string; detail?: unknown } | undefined {
  // The common outcomes need no line: answered before any string is built.
  const o = result.outcome;
  if (
    !result.degraded &&
    (o === 'processed' ||
      o === 'duplicate' ||
      o === 'in-flight' ||
      o === 'ignored' ||
      o === 'unkeyed' ||
      o === 'handshake' ||
      (o === 'accepted' && result.error === undefined) ||
      ((o === 'rejected' || o === 'too-large') && result.status < 500))
  )
    return undefined;
  const at = `${result.key ?? result.receiver ?? result.provider}${result.attempt ? ` (attempt ${result.attempt})` : ''}`;
  const degraded = result.degraded
    ? `; degraded (${result.degraded}${result.cause !== undefined ? `: ${causeOf(result.cause)}` : ''}): the event may run again, check the store`
    : '';
  switch (result.outcome) {
    case 'failed':
      return {
        level: 'error',
        message: `onceonly: failed for ${at}: ${result.code ?? 'handler_failed'}: ${causeOf(result.error)}; ${
          result.inbox?.state === 'pending'
            ? `the inbox retries it${result.inbox.nextAttemptAt ? ` at ${result.inbox.nextAttemptAt.toISOString()}` : ''}`
            : `answered ${result.status} so the provider retries`
        }${degraded}`,
        detail: result.error,
      };
    case 'store-unavailable':
      return {
        level: 'error',
        message:
          result.error instanceof StoreMisconfiguredError
            ? `onceonly: store misconfigured for ${at}: ${causeOf(result.error)}; answered 503 until it is fixed`
            : `onceonly: store unavailable for ${at}: ${causeOf(result.error)}; answered ${result.status}${result.status === 503 ? ' so the provider retries later' : ''}`,
      };
    case 'lease-lost':
      return {
        level: 'warn',
        message: `onceonly: lease-lost for ${at}: the handler finished after its lease ran out and another delivery took over; fence your writes with attempt, or raise lease`,
      };
    case 'dead':
      return {
        level: 'error',
        message: `onceonly: dead in the inbox: ${at}: ${result.code ?? 'handler_failed'}: ${causeOf(result.error)}; kept, not retried: fix the cause, then requeue it (onceonly inbox retry)${degraded}`,
        detail: result.error,
      };
    case 'accepted':
      if (result.error === undefined) break;
      return {
        level: 'error',
        message: `onceonly: inline run failed for ${at}: ${result.code ?? 'handler_failed'}: ${causeOf(result.error)}; the inbox has it${
          result.inbox?.state === 'pending' && result.inbox.nextAttemptAt
            ? `, next attempt at ${result.inbox.nextAttemptAt.toISOString()}`
            : result.inbox?.state === 'dead'
              ? ', dead (maxAttempts reached)'
              : ''
        }${degraded}`,
        detail: result.error,
      };
    case 'conflict':
      return {
        level: 'warn',
        message:
          result.code === 'type_mismatch'
            ? `onceonly: conflict for ${at}: this signed body was already seen under another type, and now arrived as ${JSON.stringify(result.type ?? null)} (the type header is not signed): acknowledged, handler not run. A replay under another type, or the sender sending one body under two topics`
            : result.code === 'receiver_clash'
              ? `onceonly: conflict for ${at}: an inbox entry accepted by another app under the receiver name ${result.receiver ?? ''}, with secrets this one lacks: left for that app's workers, neither run nor buried here. Two apps share one store and one receiver name: give each its own name`
              : `onceonly: conflict for ${at}: the key was already seen with another fingerprint: the same event id with another body (a forgery, a re-encoded replay or a corrupted retry), or, where the provider does not sign the type, a body already seen under another type`,
      };
    default:
      break;
  }
  if (result.degraded) {
    const cause =
      result.degraded === 'store-unavailable' && result.error !== undefined
        ? `: ${causeOf(result.error)}`
        : '';
    return {
      level: 'warn',
      message: `onceonly: ${result.outcome} for ${at} is degraded (${result.degraded}${result.cause !== undefined ? `: ${causeOf(result.cause)}` : cause}): the event may run again; check the store`,
    };
  }
  if (result.outcome === 'rejected' && result.status >= 500 && result.error instanceof Error)
    return { level: 'error', message: `onceonly: ${result.error.message.replace(/^onceonly: /, '')}` };
  return undefined;
}
