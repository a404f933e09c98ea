/**
 * SQS-triggered Lambdas: `export const handler = sqsBatch(store, work)` runs `once()` per record
 * and reports the records to redeliver as partial batch failures (`batchItemFailures`), so a batch
 * that partly failed re-runs only what failed, and a redelivered record that already ran is a
 * duplicate. The SQS and Lambda types are written here, as far as the helper reads them. Long-poll
 * consumers (`consumeOnce`) are in ./sqs-poll.ts, exported from here too (`onceonly/sqs`).
 */

import { ConfigError } from '../errors.js';
import {
  type Duration,
  type OnceOptions,
  type OnceResult,
  once,
  parseDuration,
  resolveTimings,
  type Store,
  type WorkContext,
} from '../once.js';
import { verdictOf } from './settle.js';

export {
  consumeOnce,
  DEAD_LETTER_ATTRIBUTES,
  type SqsClient,
  type SqsConsumer,
  type SqsConsumerOptions,
  type SqsMessage,
  type SqsMessageAttribute,
  sqsKey,
} from './sqs-poll.js';

/** One SQS message of a Lambda event, as far as the helper reads it. */
export interface SqsRecord {
  readonly messageId: string;
  readonly body: string;
  readonly receiptHandle?: string | undefined;
  readonly attributes?: Readonly<Record<string, string | undefined>> | undefined;
  readonly messageAttributes?: Readonly<Record<string, unknown>> | undefined;
  readonly md5OfBody?: string | undefined;
  /** `arn:aws:sqs:<region>:<account>:<queue>`; a FIFO queue's name ends with `.fifo`. */
  readonly eventSourceARN?: string | undefined;
}

/** The event of an SQS-triggered Lambda. */
export interface SqsEvent {
  readonly Records: readonly SqsRecord[];
}

/** The answer Lambda reads with `ReportBatchItemFailures` on the event source mapping. */
export interface SqsBatchResponse {
  batchItemFailures: { itemIdentifier: string }[];
}

/** The Lambda context, as far as the helper uses it. */
export interface SqsLambdaContext {
  getRemainingTimeInMillis(): number;
  callbackWaitsForEmptyEventLoop: boolean;
}

export interface SqsBatchOptions extends OnceOptions {
  /**
   * The dedup key of a record. The message id is the same on every redelivery of one message; key
   * on an id of your own in the body when the producer may send one event as two messages.
   * @default (record) => `sqs:${record.messageId}`
   * @example key: (record) => `orders:${JSON.parse(record.body).orderId}`
   */
  key?: (record: SqsRecord) => string;
  /**
   * How many records of a standard queue's batch run at once. A FIFO queue's records run one at a
   * time, in order, and the first that fails stops the batch: it and every record after it are
   * reported, so the group's order holds.
   * @default 10
   */
  concurrency?: number;
  /**
   * The time kept back from the invocation's remaining time: each record's deadline is the shorter
   * of `timeout` and the remaining time less this, so a record that overruns is aborted and released
   * (and reported) before Lambda stops the invocation.
   * @default '1s'
   */
  margin?: Duration;
  /** Called with each record's result (metrics, audit); what it throws is ignored. */
  onResult?: (record: SqsRecord, result: SqsRecordResult) => unknown;
}

/**
 * A record's result: `once()`'s, or `unclaimed` when the claim could not be made (the store was
 * unavailable or did not answer within `storeTimeout`, or `key` threw): nothing ran.
 */
export type SqsRecordResult = OnceResult<unknown> | { outcome: 'unclaimed'; error: unknown };

/**
 * An SQS-triggered Lambda handler that runs `work` once per record (`once()` under the record's key)
 * and answers with the records to redeliver: those that failed (the work threw or passed its
 * deadline; the claim was released), were in flight elsewhere (another invocation holds the key),
 * or could not be claimed (`unclaimed`: the store was unavailable). Processed, duplicate and lease-lost records are done
 * (lease-lost: the work finished but ran past its lease while another run took the key over; it is
 * logged, and redelivering would not undo it), and so is a conflict (a key held with another
 * fingerprint, given `fingerprint`: redelivering cannot change it; it is logged). Turn on
 * `ReportBatchItemFailures` in the event source mapping, or Lambda redelivers the whole batch.
 *
 * @example
 * export const handler = sqsBatch(store, async (record, { attempt, signal }) => {
 *   await ship(JSON.parse(record.body), { attempt, signal });
 * }, { timeout: '20s' });
 */
export function sqsBatch<T>(
  store: Store,
  work: (record: SqsRecord, ctx: WorkContext) => T | Promise<T>,
  options: SqsBatchOptions = {},
): (event: SqsEvent, context?: SqsLambdaContext) => Promise<SqsBatchResponse> {
  const {
    key = (record: SqsRecord) => `sqs:${record.messageId}`,
    concurrency = 10,
    margin,
    onResult,
    ...rest
  } = options;
  if (!Number.isSafeInteger(concurrency) || concurrency < 1) {
    throw new ConfigError(
      'invalid_option',
      `onceonly: sqsBatch concurrency must be a positive integer, got ${concurrency}`,
    );
  }
  const marginMs = parseDuration(margin ?? '1s', 'sqsBatch margin');
  // Resolved once: the lease and store deadline stay the configured ones when a record's deadline
  // is cut to the invocation's remaining time.
  const timings = resolveTimings(rest);
  const base: OnceOptions = { ...rest, lease: timings.leaseMs, storeTimeout: timings.storeTimeoutMs };

  return async (event, context) => {
    // Every record's claim is settled before the answer; see docs/lambda.md. A context that will
    // not take it (frozen) is left as it is.
    if (context !== null && typeof context === 'object') {
      try {
        context.callbackWaitsForEmptyEventLoop = false;
      } catch {}
    }
    const records = checkedRecords(event);
    const runOne = async (record: SqsRecord): Promise<boolean> => {
      const remaining = remainingOf(context);
      const timeout =
        remaining === undefined
          ? timings.timeoutMs
          : Math.min(timings.timeoutMs, Math.floor(remaining - marginMs));
      let result: SqsRecordResult;
      try {
        // No time left past the margin: reported without a claim, as the claim would be released
        // (and the work cut) at once, or Lambda would stop the invocation first.
        if (timeout < 1) throw new Error(`onceonly: sqsBatch has ${remaining} ms left, within its margin`);
        result = await once(store, key(record), (ctx) => work(record, ctx), { ...base, timeout });
      } catch (error) {
        // The claim failed (store unavailable, the key function threw, no time left): nothing ran.
        result = { outcome: 'unclaimed', error };
      }
      try {
        onResult?.(record, result);
      } catch {
        // An observer's bug must not change the answer.
      }
      // The consumers' one mapping: what is not done is reported, and SQS redelivers it (its
      // redrive policy's maxReceiveCount moves it to the dead-letter queue).
      return verdictOf(result, Number.POSITIVE_INFINITY, () => 0).action !== 'ack';
    };
    // A message twice in one batch (no queue sends one so) runs once: its copies share its answer.
    const unique = [...new Map(records.map((record) => [record.messageId, record])).values()];
    const failed = isFifo(unique) ? await inOrder(unique, runOne) : await pooled(unique, runOne, concurrency);
    return { batchItemFailures: failed.map((record) => ({ itemIdentifier: record.messageId })) };
  };
}

/**
 * The event's records, each an object with a messageId (what a failure is reported by, and the
 * default key): a batch with any other throws a TypeError before anything runs, so Lambda retries
 * the whole batch rather than a record running under a key such as `sqs:undefined` it shares.
 */
function checkedRecords(event: SqsEvent): readonly SqsRecord[] {
  const records: unknown = (event as Partial<SqsEvent> | null | undefined)?.Records;
  if (!Array.isArray(records))
    throw new TypeError('onceonly: sqsBatch takes an SQS event ({ Records: [...] })');
  records.forEach((record: unknown, i) => {
    const id = (record as Partial<SqsRecord> | null)?.messageId;
    if (record === null || typeof record !== 'object' || typeof id !== 'string' || id === '') {
      throw new TypeError(
        `onceonly: sqsBatch takes SQS records, each with a messageId; record ${i} has ${
          record === null || typeof record !== 'object'
            ? `the type ${record === null ? 'null' : typeof record}`
            : 'none'
        }`,
      );
    }
  });
  return records as SqsRecord[];
}

/** The invocation's remaining time (ms), when the context has a working `getRemainingTimeInMillis`. */
function remainingOf(context: SqsLambdaContext | undefined): number | undefined {
  try {
    const read = (context as Partial<SqsLambdaContext> | null | undefined)?.getRemainingTimeInMillis;
    const remaining: unknown = typeof read === 'function' ? read.call(context) : undefined;
    return typeof remaining === 'number' && Number.isFinite(remaining) ? remaining : undefined;
  } catch {
    return undefined;
  }
}

function isFifo(records: readonly SqsRecord[]): boolean {
  return records.some(
    (record) => typeof record.eventSourceARN === 'string' && record.eventSourceARN.endsWith('.fifo'),
  );
}

/** FIFO: one at a time; the first failure and everything after it are reported, nothing after it runs. */
async function inOrder(
  records: readonly SqsRecord[],
  runOne: (record: SqsRecord) => Promise<boolean>,
): Promise<SqsRecord[]> {
  for (let i = 0; i < records.length; i++) {
    if (await runOne(records[i]!)) return records.slice(i);
  }
  return [];
}

/** A standard queue: up to `concurrency` at once; the failures in the batch's order. */
async function pooled(
  records: readonly SqsRecord[],
  runOne: (record: SqsRecord) => Promise<boolean>,
  concurrency: number,
): Promise<SqsRecord[]> {
  const failed = new Array<boolean>(records.length).fill(false);
  let next = 0;
  const lane = async () => {
    while (next < records.length) {
      const i = next++;
      failed[i] = await runOne(records[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, records.length) }, lane));
  return records.filter((_, i) => failed[i]);
}
