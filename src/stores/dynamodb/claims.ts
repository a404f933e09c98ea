/**
 * The DynamoDB store's claims: every state change is one conditional write (UpdateItem or PutItem
 * with a ConditionExpression) on the key's item, and every time is the caller's clock (DynamoDB has
 * none a condition can read): see "Clock" in docs/dynamodb.md. A failed condition reports the item
 * that failed it (ReturnValuesOnConditionCheckFailure ALL_OLD; a strongly consistent read where the
 * server does not return it), so a claim tells what it found.
 */
import { GetItemCommand, PutItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { newToken } from '../../core/crypto.js';
import { StepError } from '../../core/steps.js';
import {
  assertVersion,
  type Claim,
  type ClaimOptions,
  createLease,
  type Lease,
  type RecordOptions,
  type RecordView,
  sameFingerprint,
} from '../../core/types.js';
import { StoreMisconfiguredError, StoreUnavailableError } from '../../errors.js';
import { conditionFailed, dynamoFailure, errorName } from './failure.js';
import {
  type Attr,
  type ClaimRecord,
  claimPk,
  conditional,
  expression,
  type Item,
  N,
  readClaim,
  readSteps,
  S,
  shownKey,
  ttlSeconds,
  versionPk,
  viewOf,
  type Written,
} from './items.js';

/** What the store needs of a client: `send` of the SDK's commands (DynamoDBClient fits). */
export interface DynamoDbClientLike {
  send(command: any, options?: any): Promise<any>;
}

export interface DynamoClaimsOptions {
  client: DynamoDbClientLike;
  table: string;
  /** How long a takeable record is kept after its lease's end when the claim gives no `retentionMs`. */
  defaultGraceMs: number;
  /** The most the clocks of the processes sharing the table may differ, in ms. */
  skewMs: number;
  now: () => number;
}

/** The most one key's steps hold on this store: its item has a 400 KB limit (see docs/dynamodb.md). */
export const DYNAMODB_STEPS_MAX_BYTES = 350 * 1024;

/** A claim retries when the item changed between its write and its read; each retry follows another's write. */
const MAX_ROUNDS = 8;

const EMPTY_MAP: Attr = { M: {} };
const STATES = { ':processing': S('processing'), ':released': S('released'), ':completed': S('completed') };

/** The record is still this token's processing record, in its life (its lease may have run out). */
const OWNED = '#token = :token AND #state = :processing AND #dropAt > :now';

export class DynamoClaims {
  readonly #client: DynamoDbClientLike;
  readonly table: string;
  readonly #graceMs: number;
  readonly #skewMs: number;
  readonly #now: () => number;

  constructor(options: DynamoClaimsOptions) {
    this.#client = options.client;
    this.table = options.table;
    this.#graceMs = options.defaultGraceMs;
    this.#skewMs = options.skewMs;
    this.#now = options.now;
  }

  /** The clock's reading in whole ms; called as a plain function. */
  now(): number {
    return Math.floor(this.#now.call(undefined));
  }

  async #send<T>(what: string, command: unknown): Promise<T> {
    try {
      return (await this.#client.send(command)) as T;
    } catch (error) {
      if (conditionFailed(error)) throw error;
      throw dynamoFailure(this.table, what, error);
    }
  }

  /**
   * A conditional write: true when it landed, the item that failed the condition when not (the
   * one DynamoDB returned with it, else a strongly consistent read; undefined when gone).
   */
  async #write(what: string, command: unknown, pk: string): Promise<Written<{ Attributes?: Item }>> {
    const written = await conditional(() => this.#send<{ Attributes?: Item }>(what, command));
    if (written.done || written.item) return written;
    return { done: false, item: await this.#get(what, pk) };
  }

  async #get(what: string, pk: string, projection?: string): Promise<Item | undefined> {
    const out = await this.#send<{ Item?: Item }>(
      what,
      new GetItemCommand({
        TableName: this.table,
        Key: { pk: S(pk) },
        ConsistentRead: true,
        ...(projection ? { ProjectionExpression: projection, ...expression([projection], {}) } : {}),
      }),
    );
    return out.Item;
  }

  /** The attributes every write of a record sets; `endMs` is the lease's or retention's end. */
  #times(now: number, endMs: number, graceMs: number) {
    return {
      ':now': N(now),
      ':exp': N(endMs),
      ':graceMs': N(graceMs),
      ':graceS': N(Math.ceil(graceMs / 1000)),
      ':dropAt': N(endMs + graceMs),
      ':ttl': N(ttlSeconds(endMs + graceMs, this.#skewMs)),
    };
  }

  /**
   * A fresh life of the key (attempt 1, no steps): one PutItem over an absent item or one whose life
   * ended (TTL deletes lazily). The common case of every claim and record: a new event.
   */
  #fresh(what: string, pk: string, now: number, item: Item) {
    const condition = 'attribute_not_exists(#pk) OR #dropAt <= :now';
    return this.#write(
      what,
      new PutItemCommand({
        TableName: this.table,
        Item: { pk: S(pk), ...item },
        ConditionExpression: condition,
        ...expression([condition], { ':now': N(now) }),
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
      pk,
    );
  }

  /** A new record's attributes: its state and owner, its times, its fingerprint. */
  #item(
    key: string,
    state: string,
    token: string,
    now: number,
    endMs: number,
    graceMs: number,
    fp?: string,
  ): Item {
    return {
      key: S(shownKey(key)),
      state: S(state),
      token: S(token),
      attempt: N(1),
      expiresAt: N(endMs),
      updatedAt: N(now),
      graceMs: N(graceMs),
      graceS: N(Math.ceil(graceMs / 1000)),
      dropAt: N(endMs + graceMs),
      ttl: N(ttlSeconds(endMs + graceMs, this.#skewMs)),
      ...(state === 'processing' ? { steps: EMPTY_MAP } : {}),
      ...(fp === undefined ? {} : { fingerprint: S(fp) }),
    };
  }

  /**
   * Takes over a takeable record (released, or run out by more than the skew, of the same
   * fingerprint): the attempt goes on from the last owner's; a claim keeps the steps, a record
   * completes at once and drops them.
   */
  #takeover(
    what: string,
    pk: string,
    values: Record<string, Attr>,
    dropSteps: boolean,
    fingerprint?: string,
  ) {
    const removed = [...(dropSteps ? ['#steps'] : []), ...(fingerprint === undefined ? ['#fp'] : [])];
    const update = `SET #state = :state, #token = :token, #attempt = #attempt + :one, #exp = :exp, #upd = :now, #graceMs = :graceMs, #graceS = :graceS, #dropAt = :dropAt, #ttl = :ttl${
      fingerprint === undefined ? '' : ', #fp = :fp'
    }${removed.length > 0 ? ` REMOVE ${removed.join(', ')}` : ''}`;
    const condition = `#dropAt > :now AND (#state = :released OR (#state = :processing AND #exp <= :stale))${
      fingerprint === undefined ? '' : ' AND (attribute_not_exists(#fp) OR #fp = :fp)'
    }`;
    return this.#write(
      what,
      new UpdateItemCommand({
        TableName: this.table,
        Key: { pk: S(pk) },
        UpdateExpression: update,
        ConditionExpression: condition,
        ...expression([update, condition], values),
        ReturnValues: 'UPDATED_NEW',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
      pk,
    );
  }

  /** What a found record means to a claim or record at `now`: its life ended, completed, live, or takeable. */
  #judge(what: string, item: Item, now: number, fingerprint: string | undefined) {
    const found = this.#record(what, item);
    const same = sameFingerprint(found.fingerprint, fingerprint);
    const live = found.state === 'processing' && found.expiresAt > now - this.#skewMs;
    const kind =
      found.dropAt <= now
        ? 'ended'
        : found.state === 'completed'
          ? 'completed'
          : live || !same
            ? 'busy'
            : 'takeable';
    return { found, same, kind } as const;
  }

  async claim(key: string, { leaseMs, fingerprint, retentionMs }: ClaimOptions): Promise<Claim> {
    const pk = claimPk(key);
    const graceMs = retentionMs ?? this.#graceMs;
    const what = 'claim a key';
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const now = this.now();
      const token = newToken();
      const exp = now + leaseMs;
      const lease = (attempt: number) =>
        ({
          status: 'acquired',
          lease: createLease({ key, token, attempt, fingerprint, expiresAt: new Date(exp) }),
        }) as const;
      const fresh = await this.#fresh(
        what,
        pk,
        now,
        this.#item(key, 'processing', token, now, exp, graceMs, fingerprint),
      );
      if (fresh.done) return lease(1);
      if (fresh.item === undefined) continue; // gone in between: claim again
      const seen = this.#judge(what, fresh.item, now, fingerprint);
      if (seen.kind === 'ended') continue;
      if (seen.kind === 'completed') return { status: 'completed', sameFingerprint: seen.same };
      if (seen.kind === 'takeable') {
        const values: Record<string, Attr> = {
          ...STATES,
          ...this.#times(now, exp, graceMs),
          ':state': STATES[':processing'],
          ':stale': N(now - this.#skewMs),
          ':token': S(token),
          ':one': N(1),
          ...(fingerprint === undefined ? {} : { ':fp': S(fingerprint) }),
        };
        const taken = await this.#takeover(what, pk, values, false, fingerprint);
        if (taken.done) return lease(Number(taken.out.Attributes?.attempt?.N ?? 0));
        continue; // another claim took it, or it changed: look again
      }
      const { found } = seen;
      return {
        status: 'in-flight',
        attempt: found.attempt,
        expiresAt: new Date(found.expiresAt),
        sameFingerprint: seen.same,
      };
    }
    throw new StoreUnavailableError(
      `onceonly: DynamoDB store could not claim "${key}": its item changed under ${MAX_ROUNDS} claims in a row; it passes with the contention`,
    );
  }

  /** A claim item as a record; an item the store did not write is a misconfiguration. */
  #record(what: string, item: Item): ClaimRecord {
    const record = readClaim(item);
    if (record === undefined) {
      throw new StoreMisconfiguredError(
        'store_foreign_value',
        `onceonly: DynamoDB store could not ${what}: the table "${this.table}" holds an item under this key that onceonly did not write; give dynamoDbStore a table of its own`,
      );
    }
    return record;
  }

  async confirm(lease: Lease, { retentionMs }: { retentionMs: number }): Promise<boolean> {
    if (lease.token === '') return false;
    const now = this.now();
    // Ours (run out or not), ours already completed (a repeated confirm), or vanished: the whole
    // item written completed, with the lease's own attempt and fingerprint, and no steps.
    const condition =
      '(#token = :token AND (#state = :processing OR #state = :completed)) OR attribute_not_exists(#pk) OR #dropAt <= :now';
    const item = {
      pk: S(claimPk(lease.key)),
      ...this.#item(lease.key, 'completed', lease.token, now, now + retentionMs, 0, lease.fingerprint),
      attempt: N(lease.attempt),
    };
    const written = await conditional(() =>
      this.#send(
        'confirm a key',
        new PutItemCommand({
          TableName: this.table,
          Item: item,
          ConditionExpression: condition,
          ...expression([condition], { ...STATES, ':token': S(lease.token), ':now': N(now) }),
        }),
      ),
    );
    return written.done;
  }

  async #landed(
    what: string,
    key: string,
    update: string,
    condition: string,
    values: Record<string, Attr>,
  ): Promise<boolean> {
    const written = await conditional(() =>
      this.#send(
        what,
        new UpdateItemCommand({
          TableName: this.table,
          Key: { pk: S(claimPk(key)) },
          UpdateExpression: update,
          ConditionExpression: condition,
          ...expression([update, condition], values),
        }),
      ),
    );
    return written.done;
  }

  async release(lease: Lease): Promise<boolean> {
    if (lease.token === '') return false;
    const now = this.now();
    // Nobody owns it, takeable at once; attempt, fingerprint and steps kept for its grace.
    const update =
      'SET #state = :released, #exp = :now, #upd = :now, #dropAt = :now + #graceMs, #ttl = :ttlBase + #graceS REMOVE #token';
    return this.#landed('release a key', lease.key, update, OWNED, {
      ...STATES,
      ':now': N(now),
      ':token': S(lease.token),
      ':ttlBase': N(ttlSeconds(now, this.#skewMs)),
    });
  }

  async extend(lease: Lease, { leaseMs }: { leaseMs: number }): Promise<boolean> {
    if (lease.token === '') return false;
    const now = this.now();
    const exp = now + leaseMs;
    const update = 'SET #exp = :exp, #upd = :now, #dropAt = :exp + #graceMs, #ttl = :ttlBase + #graceS';
    return this.#landed('extend a lease', lease.key, update, OWNED, {
      ...STATES,
      ':now': N(now),
      ':exp': N(exp),
      ':token': S(lease.token),
      ':ttlBase': N(ttlSeconds(exp, this.#skewMs)),
    });
  }

  async record(key: string, { retentionMs, fingerprint }: RecordOptions): Promise<{ duplicate: boolean }> {
    const pk = claimPk(key);
    const what = 'record a key';
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const now = this.now();
      const exp = now + retentionMs;
      const token = newToken();
      const fresh = await this.#fresh(
        what,
        pk,
        now,
        this.#item(key, 'completed', token, now, exp, 0, fingerprint),
      );
      if (fresh.done) return { duplicate: false };
      if (fresh.item === undefined) continue;
      const seen = this.#judge(what, fresh.item, now, fingerprint);
      if (seen.kind === 'ended') continue;
      if (seen.kind !== 'takeable') return { duplicate: true };
      const values: Record<string, Attr> = {
        ...STATES,
        ...this.#times(now, exp, 0),
        ':state': STATES[':completed'],
        ':stale': N(now - this.#skewMs),
        ':token': S(token),
        ':one': N(1),
        ...(fingerprint === undefined ? {} : { ':fp': S(fingerprint) }),
      };
      // Completed at once: its steps go.
      if ((await this.#takeover(what, pk, values, true, fingerprint)).done) return { duplicate: false };
    }
    throw new StoreUnavailableError(
      `onceonly: DynamoDB store could not record "${key}": its item changed under ${MAX_ROUNDS} writes in a row; it passes with the contention`,
    );
  }

  async advance(entity: string, version: number): Promise<boolean> {
    assertVersion(version);
    const update = 'SET #version = :version';
    const condition = 'attribute_not_exists(#version) OR #version < :version';
    const written = await conditional(() =>
      this.#send(
        'advance a version',
        new UpdateItemCommand({
          TableName: this.table,
          Key: { pk: S(versionPk(entity)) },
          UpdateExpression: update,
          ConditionExpression: condition,
          ...expression([update, condition], { ':version': N(version) }),
        }),
      ),
    );
    return written.done;
  }

  /** The key's record while its life lasts (an item past `dropAt` waits for TTL: it reads as absent). */
  async inspect(key: string): Promise<RecordView | undefined> {
    const item = await this.#get('inspect a key', claimPk(key));
    if (item === undefined) return undefined;
    const record = this.#record('inspect a key', item);
    // The key as given: the item's `key` attribute may show it cut short.
    return record.dropAt <= this.now() ? undefined : { ...viewOf(record), key };
  }

  /** The steps of the key's record in its life: a lease's, or a released or run-out record's. */
  async loadSteps(lease: Lease): Promise<ReadonlyMap<string, string>> {
    const item = await this.#get('load steps', claimPk(lease.key), '#steps, #dropAt');
    const dropAt = Number((item?.dropAt as { N?: string } | undefined)?.N ?? 0);
    return dropAt > this.now() ? readSteps(item) : new Map();
  }

  /** One step's result, when the lease's token still owns the key (as extend). */
  async saveStep(lease: Lease, name: string, value: string): Promise<boolean> {
    if (lease.token === '') return false;
    // Every processing record has its steps map (a claim makes it), so the path always exists.
    const update = 'SET #steps.#name = :value';
    try {
      await this.#client.send(
        new UpdateItemCommand({
          TableName: this.table,
          Key: { pk: S(claimPk(lease.key)) },
          UpdateExpression: update,
          ConditionExpression: OWNED,
          ExpressionAttributeNames: {
            ...expression([update, OWNED], {}).ExpressionAttributeNames,
            '#name': name,
          },
          ExpressionAttributeValues: {
            ':value': S(value),
            ':token': S(lease.token),
            ':processing': STATES[':processing'],
            ':now': N(this.now()),
          },
        }),
      );
      return true;
    } catch (error) {
      if (conditionFailed(error)) return false;
      if (errorName(error) === 'ValidationException' && /item size/i.test(String((error as Error).message))) {
        throw new StepError(
          'step_too_large',
          name,
          `onceonly: step "${name}" does not fit in its key's DynamoDB item (400 KB with the key and every step): keep step results small (an id, not a whole response)`,
          { cause: error },
        );
      }
      throw dynamoFailure(this.table, 'save a step', error);
    }
  }
}
