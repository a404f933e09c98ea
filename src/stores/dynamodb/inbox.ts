/**
 * The DynamoDB store's inbox: one item per entry in the store's table (inbox-items.ts). Entries to
 * run carry `iq` (the receiver) and `idue` (when due, or the lease's end): the sparse global
 * secondary index `inbox` on them is what `take` queries, oldest due first; each take is then one
 * conditional UpdateItem, so two workers never take one entry. The operator's views (stats, list,
 * requeue of every dead entry, purge) Scan the table, bounded. DynamoDB items hold 400 KB: a
 * delivery past {@link DYNAMODB_INBOX_MAX_BYTES} is refused (`store_full`, 503).
 */
import {
  DeleteItemCommand,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  ScanCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { newToken } from '../../core/crypto.js';
import {
  type InboxAccepted,
  type InboxAcceptInput,
  type InboxAcceptOptions,
  type InboxDelivery,
  type InboxEntryView,
  type InboxJob,
  type InboxListOptions,
  type InboxStats,
  type InboxStore,
  type InboxTakeOptions,
  inboxErrorLine,
  positionAfter,
  positionCursor,
  unreadableJob,
} from '../../core/inbox.js';
import type { StepStore } from '../../core/step-store.js';
import { createLease, type Lease } from '../../core/types.js';
import type { DynamoDbClientLike } from './claims.js';
import { conditionFailed, dynamoFailure } from './failure.js';
import {
  checkSize,
  DYNAMODB_INBOX_MAX_BYTES,
  DYNAMODB_INBOX_STEPS_MAX_BYTES,
  deliveryOf,
  INBOX_INDEX,
  inboxPk,
  isInboxPk,
  names,
  num,
  OWNED,
  rank,
  stateOf,
  str,
  used,
  viewOf,
} from './inbox-items.js';
import { inboxSteps } from './inbox-steps.js';
import { type Attr, conditional, type Item, N, S } from './items.js';

export { DYNAMODB_INBOX_MAX_BYTES, DYNAMODB_INBOX_STEPS_MAX_BYTES, INBOX_INDEX };

export class DynamoInbox implements InboxStore {
  readonly #client: DynamoDbClientLike;
  readonly #table: string;
  readonly #now: () => number;
  readonly #skewMs: number;
  readonly #scanLimit: number;

  constructor(o: {
    client: DynamoDbClientLike;
    table: string;
    now: () => number;
    skewMs: number;
    scanLimit: number;
  }) {
    this.#client = o.client;
    this.#table = o.table;
    this.#now = o.now;
    this.#skewMs = o.skewMs;
    this.#scanLimit = o.scanLimit;
    this.steps = inboxSteps(o.client, o.table, (lease, update, values, extra) =>
      this.#byOwner('save a step', lease, update, () => values, extra),
    );
  }

  #time(): number {
    return this.#now.call(undefined);
  }

  async #send<T>(what: string, command: unknown): Promise<T> {
    try {
      return (await this.#client.send(command as never)) as T;
    } catch (error) {
      if (conditionFailed(error)) throw error;
      throw dynamoFailure(this.#table, what, error);
    }
  }

  async #read(key: string): Promise<Item | undefined> {
    const out = await this.#send<{ Item?: Item }>(
      'read an inbox entry',
      new GetItemCommand({ TableName: this.#table, Key: { pk: S(inboxPk(key)) }, ConsistentRead: true }),
    );
    return out.Item;
  }

  /** One conditional UpdateItem on the key's entry: `false` when its condition did not hold. */
  async #update(
    what: string,
    key: string,
    update: string,
    condition: string,
    values: Record<string, Attr>,
    extraNames?: Record<string, string>,
  ): Promise<boolean> {
    const written = await conditional(() =>
      this.#send(
        what,
        new UpdateItemCommand({
          TableName: this.#table,
          Key: { pk: S(inboxPk(key)) },
          UpdateExpression: update,
          ConditionExpression: condition,
          ExpressionAttributeNames: names([update, condition], extraNames),
          ExpressionAttributeValues: used([update, condition], values),
        }),
      ),
    );
    return written.done;
  }

  /**
   * One UpdateItem on the lease's entry that lands only while the lease owns it (processing, its
   * token): `false` when it does not, or the lease has no token. `values` get `:now`, the clock's
   * reading, besides the owner's.
   */
  #byOwner(
    what: string,
    lease: Lease,
    update: string,
    values: (at: number) => Record<string, Attr> = () => ({}),
    extraNames?: Record<string, string>,
  ): Promise<boolean> {
    if (lease.token === '') return Promise.resolve(false);
    const at = this.#time();
    const owned = { ':processing': S('processing'), ':token': S(lease.token), ':now': N(at) };
    return this.#update(what, lease.key, update, OWNED, { ...owned, ...values(at) }, extraNames);
  }

  async accept(input: InboxAcceptInput, options: InboxAcceptOptions = {}): Promise<InboxAccepted> {
    const headers = JSON.stringify(input.headers.map(([n, v]) => [n, v]));
    checkSize(input, headers);
    for (let round = 0; ; round++) {
      const at = this.#time();
      const claiming = options.claimMs !== undefined;
      const token = claiming ? newToken() : '';
      const due = claiming ? at + (options.claimMs ?? 0) : at;
      const item: Item = {
        pk: S(inboxPk(input.key)),
        key: S(input.key),
        receiver: S(input.receiver),
        state: S(claiming ? 'processing' : 'pending'),
        fingerprint: S(input.fingerprint),
        attempts: N(claiming ? 1 : 0),
        due: N(due),
        acceptedAt: N(at),
        updatedAt: N(at),
        body: { B: input.body },
        headers: S(headers),
        receivedAt: N(input.receivedAt.getTime()),
        steps: { M: {} },
        iq: S(input.receiver),
        idue: N(due),
      };
      if (claiming) item.token = S(token);
      if (input.url !== undefined) item.url = S(input.url);
      if (input.type !== undefined) item.type = S(input.type);
      if (input.id !== undefined) item.id = S(input.id);
      if (input.item !== undefined) item.item = S(input.item);
      const condition = 'attribute_not_exists(#pk) OR (#state = :completed AND #due <= :now)';
      const written = await conditional(() =>
        this.#send(
          'accept an inbox entry',
          new PutItemCommand({
            TableName: this.#table,
            Item: item,
            ConditionExpression: condition,
            ExpressionAttributeNames: names([condition]),
            ExpressionAttributeValues: { ':completed': S('completed'), ':now': N(at) },
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          }),
        ),
      );
      if (!written.done) {
        // DynamoDB returns the item that failed the condition; dynalite does not: read it then.
        const held = written.item ?? (await this.#read(input.key));
        if (!held && round < 3) continue; // purged in between: accept again
        const state = held ? stateOf(held) : 'completed';
        return str(held?.fingerprint) === input.fingerprint
          ? { status: 'duplicate', state }
          : { status: 'conflict', state };
      }
      if (!claiming) return { status: 'accepted' };
      const lease = createLease({
        key: input.key,
        token,
        attempt: 1,
        fingerprint: input.fingerprint,
        expiresAt: new Date(due),
      });
      return { status: 'accepted', lease };
    }
  }

  /**
   * Pages of due candidates, oldest due first: of a receiver (Query on the index), or of every
   * receiver (a Scan, its candidates sorted, bounded by the scan limit).
   */
  async *#due(receiver: string | undefined, at: number, want: number): AsyncGenerator<Item[]> {
    let start: Item | undefined;
    let seen = 0;
    const all: Item[] = [];
    do {
      const out = await this.#send<{ Items?: Item[]; LastEvaluatedKey?: Item }>(
        'find due inbox entries',
        receiver !== undefined
          ? new QueryCommand({
              TableName: this.#table,
              IndexName: INBOX_INDEX,
              KeyConditionExpression: '#iq = :rcv AND #idue <= :now',
              ExpressionAttributeNames: names(['#iq #idue']),
              ExpressionAttributeValues: { ':rcv': S(receiver), ':now': N(at) },
              Limit: Math.min(Math.max(want * 2, 25), 1_000),
              ExclusiveStartKey: start,
            })
          : new ScanCommand({
              TableName: this.#table,
              FilterExpression: 'attribute_exists(#iq) AND #idue <= :now',
              ExpressionAttributeNames: names(['#iq #idue']),
              ExpressionAttributeValues: { ':now': N(at) },
              ExclusiveStartKey: start,
            }),
      );
      const items = out.Items ?? [];
      seen += items.length;
      start = out.LastEvaluatedKey;
      if (receiver !== undefined) yield items;
      else all.push(...items);
    } while (start && seen < this.#scanLimit);
    if (receiver === undefined) yield all.sort((a, b) => (num(a.idue) ?? 0) - (num(b.idue) ?? 0));
  }

  async take({ limit, leaseMs, receiver }: InboxTakeOptions): Promise<InboxJob[]> {
    if (limit <= 0) return [];
    const at = this.#time();
    const jobs: InboxJob[] = [];
    for await (const page of this.#due(receiver, at, limit)) {
      for (const candidate of page) {
        if (jobs.length >= limit) break;
        const job = await this.#takeOne(candidate, at, leaseMs);
        if (job) jobs.push(job);
      }
      if (jobs.length >= limit) break;
    }
    return jobs;
  }

  /** One conditional UpdateItem taking a candidate: its job, or undefined when it was not takeable. */
  async #takeOne(candidate: Item, at: number, leaseMs: number): Promise<InboxJob | undefined> {
    const key = str(candidate.key);
    if (key === undefined) return undefined;
    const token = newToken();
    const due = at + leaseMs;
    const update =
      'SET #state = :processing, #token = :token, #att = #att + :one, #due = :due, #idue = :due, #upd = :now';
    // Pending and due, or processing with a lease that ran out by more than the clock skew.
    const condition = '(#state = :pending AND #due <= :now) OR (#state = :processing AND #due <= :over)';
    const written = await conditional(() =>
      this.#send<{ Attributes?: Item }>(
        'take an inbox entry',
        new UpdateItemCommand({
          TableName: this.#table,
          Key: { pk: S(inboxPk(key)) },
          UpdateExpression: update,
          ConditionExpression: condition,
          ExpressionAttributeNames: names([update, condition]),
          ExpressionAttributeValues: {
            ':processing': S('processing'),
            ':pending': S('pending'),
            ':token': S(token),
            ':one': N(1),
            ':due': N(due),
            ':now': N(at),
            ':over': N(at - this.#skewMs),
          },
          ReturnValues: 'ALL_OLD',
        }),
      ),
    );
    // Not takeable: taken by another worker, or not due after all.
    const old = written.done ? written.out.Attributes : undefined;
    if (!old) return undefined;
    const fingerprint = str(old.fingerprint) ?? '';
    const known = {
      key,
      receiver: str(old.receiver) ?? '',
      type: str(old.type),
      id: str(old.id),
      item: str(old.item),
      fingerprint,
      acceptedAt: new Date(num(old.acceptedAt) ?? at),
      lease: createLease({
        key,
        token,
        attempt: (num(old.attempts) ?? 0) + 1,
        fingerprint,
        expiresAt: new Date(due),
      }),
    };
    try {
      return { ...deliveryOf(old), ...known, takenOver: stateOf(old) === 'processing' };
    } catch (error) {
      return unreadableJob(known, error);
    }
  }

  extend(lease: Lease, { leaseMs }: { leaseMs: number }): Promise<boolean> {
    return this.#byOwner(
      'extend an inbox lease',
      lease,
      'SET #due = :due, #idue = :due, #upd = :now',
      (at) => ({
        ':due': N(at + leaseMs),
      }),
    );
  }

  complete(lease: Lease, options: { retentionMs: number; dropBody?: boolean }): Promise<boolean> {
    const drop = options.dropBody ? ', #body, #hdr, #url' : '';
    return this.#byOwner(
      'complete an inbox entry',
      lease,
      `SET #state = :completed, #due = :due, #upd = :now, #ttl = :ttl REMOVE #token, #steps, #iq, #idue${drop}`,
      (at) => ({
        ':completed': S('completed'),
        ':due': N(at + options.retentionMs),
        ':ttl': N(Math.ceil((at + options.retentionMs + this.#skewMs) / 1000)),
      }),
    );
  }

  retry(lease: Lease, { delayMs, error }: { delayMs: number; error: string }): Promise<boolean> {
    return this.#byOwner(
      'retry an inbox entry',
      lease,
      'SET #state = :pending, #due = :due, #idue = :due, #upd = :now, #err = :err REMOVE #token',
      (at) => ({ ':pending': S('pending'), ':due': N(at + delayMs), ':err': S(inboxErrorLine(error)) }),
    );
  }

  bury(lease: Lease, { error }: { error: string }): Promise<boolean> {
    return this.#byOwner(
      'bury an inbox entry',
      lease,
      'SET #state = :dead, #due = :now, #upd = :now, #err = :err REMOVE #token, #iq, #idue',
      () => ({ ':dead': S('dead'), ':err': S(inboxErrorLine(error)) }),
    );
  }

  /** Every entry's item (of a receiver), bounded by the scan limit; `projection` when given. */
  async #scan(receiver: string | undefined, projection?: string): Promise<Item[]> {
    const filter = `begins_with(#pk, :i)${receiver !== undefined ? ' AND #rcv = :rcv' : ''}`;
    const values: Record<string, Attr> = { ':i': S('i') };
    if (receiver !== undefined) values[':rcv'] = S(receiver);
    const items: Item[] = [];
    let start: Item | undefined;
    do {
      const out = await this.#send<{ Items?: Item[]; LastEvaluatedKey?: Item }>(
        'scan the inbox',
        new ScanCommand({
          TableName: this.#table,
          ConsistentRead: true,
          FilterExpression: filter,
          ProjectionExpression: projection,
          ExpressionAttributeNames: names([filter, projection]),
          ExpressionAttributeValues: values,
          ExclusiveStartKey: start,
        }),
      );
      for (const item of out.Items ?? []) if (isInboxPk(str(item.pk) ?? '')) items.push(item);
      start = out.LastEvaluatedKey;
    } while (start && items.length < this.#scanLimit);
    return items;
  }

  async stats(options: { receiver?: string } = {}): Promise<InboxStats> {
    const items = await this.#scan(options.receiver, '#pk, #state, #due');
    const at = this.#time();
    const counts = { pending: 0, processing: 0, completed: 0, dead: 0, scheduled: 0 };
    let oldestDue = at;
    for (const item of items) {
      const state = stateOf(item);
      const due = num(item.due) ?? 0;
      if (state === 'completed' && due <= at) continue;
      counts[state]++;
      if (state === 'pending' && due > at) counts.scheduled++;
      if ((state === 'pending' || state === 'processing') && due <= at) oldestDue = Math.min(oldestDue, due);
    }
    return { ...counts, oldestDueMs: at - oldestDue };
  }

  async list(options: InboxListOptions = {}): Promise<InboxEntryView[]> {
    const projection = '#pk, #key, #rcv, #state, #type, #id, #att, #acc, #due, #upd, #err, #hdr';
    const items = await this.#scan(options.receiver, projection);
    const at = this.#time();
    const start = positionAfter(options.after, 'dynamoDbStore') + (options.offset ?? 0);
    return items
      .map((item) => ({ ...viewOf(item), hasBody: item.headers !== undefined }))
      .filter(
        (v) =>
          !(v.state === 'completed' && v.dueAt.getTime() <= at) &&
          (options.state === undefined || v.state === options.state),
      )
      .sort((a, b) => rank(a.state) - rank(b.state) || a.dueAt.getTime() - b.dueAt.getTime())
      .slice(start, start + (options.limit ?? 100))
      .map((v, i) => ({ ...v, cursor: positionCursor(start + i + 1) }));
  }

  async get(key: string): Promise<(InboxEntryView & { delivery: InboxDelivery | undefined }) | undefined> {
    const item = await this.#read(key);
    if (!item) return undefined;
    const view = viewOf(item);
    if (view.state === 'completed' && view.dueAt.getTime() <= this.#time()) return undefined;
    let delivery: InboxDelivery | undefined;
    try {
      delivery = view.hasBody ? deliveryOf(item) : undefined;
    } catch {
      delivery = undefined;
    }
    return { ...view, delivery };
  }

  async requeue(target: { key: string } | { dead: true; receiver?: string }): Promise<number> {
    // One key may also be pending with its next attempt ahead (retry now), never processing.
    const wake = async (key: string, receiver: string, waiting = false) => {
      const dead = '#state = :dead';
      const woke = await this.#update(
        'requeue an inbox entry',
        key,
        'SET #state = :pending, #due = :now, #idue = :now, #iq = :rcv, #upd = :now',
        `${waiting ? `(${dead} OR (#state = :pending AND #due > :now))` : dead} AND attribute_exists(#body)`,
        { ':pending': S('pending'), ':dead': S('dead'), ':now': N(this.#time()), ':rcv': S(receiver) },
      );
      return woke ? 1 : 0;
    };
    if ('key' in target) {
      const item = await this.#read(target.key);
      return item ? wake(target.key, str(item.receiver) ?? '', true) : 0;
    }
    let n = 0;
    for (const item of await this.#scan(target.receiver, '#pk, #key, #rcv, #state')) {
      if (str(item.state) !== 'dead') continue;
      n += await wake(str(item.key) ?? '', str(item.receiver) ?? '');
    }
    return n;
  }

  async purge(options: { batchSize?: number } = {}): Promise<number> {
    const at = this.#time();
    let n = 0;
    for (const item of await this.#scan(undefined, '#pk, #state, #due')) {
      if (options.batchSize !== undefined && n >= options.batchSize) break;
      if (str(item.state) !== 'completed' || (num(item.due) ?? 0) > at) continue;
      const condition = '#state = :completed AND #due <= :now';
      const written = await conditional(() =>
        this.#send(
          'purge the inbox',
          new DeleteItemCommand({
            TableName: this.#table,
            Key: { pk: item.pk! },
            ConditionExpression: condition,
            ExpressionAttributeNames: names([condition]),
            ExpressionAttributeValues: { ':completed': S('completed'), ':now': N(at) },
          }),
        ),
      );
      if (written.done) n++;
    }
    return n;
  }

  /** Durable steps in the entry's item: see StepStore. */
  readonly steps: StepStore;
}
