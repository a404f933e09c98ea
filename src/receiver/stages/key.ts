/**
 * The key stage: from a verified delivery, the handler that runs it, its dedup key and its
 * fingerprint. A type the signature does not cover (GitHub's X-GitHub-Event) is bound into the
 * fingerprint, so the same signed body under another type is a conflict, never a second run.
 * Synchronous but for `remember` (an ignored delivery of an unsigned type, which is stored).
 */
import { sha256Hex } from '../../core/crypto.js';
import { digestKey, idKey } from '../../core/keys.js';
import type { TelemetryRun } from '../../core/telemetry.js';
import { VerificationError } from '../../errors.js';
import type { Verified } from '../../providers/types.js';
import type { ReceiverCore } from '../core.js';
import type { Done, Known } from '../outcome.js';
import type { DeliveryResult } from '../result.js';
import type { Runnable } from '../work.js';
import { remember } from './settle.js';

/**
 * The event to run (and `base` filled in with its key, id and type), or its outcome when it runs
 * nothing: ignored (no handler), remembered (ignored, of an unsigned type), or refused (unkeyed,
 * with `onUnkeyed: 'reject'`).
 */
export function keyOf(
  core: ReceiverCore,
  verified: Verified<unknown>,
  bytes: Uint8Array,
  base: Known,
  done: Done,
  run: TelemetryRun | undefined,
): Runnable | DeliveryResult | Promise<DeliveryResult> {
  base.id = verified.id;
  base.type = verified.type;
  const handler = core.pickHandler(verified.type);
  const unsignedType =
    verified.typeSigned === false || (verified.typeSigned !== true && verified.type !== undefined);
  // The raw body's digest, only when something below needs it (a provider's own fingerprint and
  // an id key need none).
  let bodyDigest: string | undefined;
  const digest = () => (bodyDigest ??= sha256Hex(bytes));
  let key: string | undefined;
  const id = verified.key ?? verified.id;
  if (verified.dedup === 'id' && id) key = idKey(core.space, id);
  else if (verified.dedup === 'body') key = digestKey(core.space, verified.signedDigest ?? digest());
  base.key = key;
  // Ignored, with a signed type: nothing is stored, so no fingerprint is needed.
  if (!handler && !unsignedType) return done('ignored', 200);
  // A provider whose retries rewrite a per-attempt field gives a content fingerprint without it.
  let fingerprint = verified.fingerprint ?? digest();
  if (unsignedType) fingerprint = sha256Hex(`${fingerprint}\n${verified.type ?? ''}`);
  // Keyed on the raw body's digest with the type bound into the fingerprint: a mismatch of
  // fingerprints can only be the same body under another type.
  const typeOnly =
    unsignedType &&
    verified.dedup === 'body' &&
    verified.signedDigest === undefined &&
    verified.fingerprint === undefined;
  if (!handler) {
    // Ignored, with an unsigned type: the body is remembered under its type, so a captured copy
    // resent under a type we do handle is refused.
    if (key === undefined) return done('ignored', 200);
    return remember(core, key, fingerprint, typeOnly, done);
  }
  if (key === undefined && core.onUnkeyed === 'reject') {
    return done('rejected', 422, {
      code: 'unkeyed',
      error: new VerificationError(
        'unkeyed',
        'onceonly: the delivery has no usable event id and onUnkeyed is reject',
      ),
    });
  }
  return {
    handler,
    event: verified.event,
    type: verified.type,
    id: verified.id,
    key,
    fingerprint,
    typeOnly,
    run,
  };
}
