/**
 * A failed DynamoDB call as the store's error: a missing table, a refused permission or bad
 * credentials (misconfigurations no retry fixes, each with its fix), or throttling, a server error
 * or an unreachable endpoint (unavailable, 503: the provider retries).
 */
import { StoreMisconfiguredError, StoreUnavailableError } from '../../errors.js';

/** The error's name as the SDK sets it (`ResourceNotFoundException`...), or its code. */
export function errorName(err: unknown): string {
  if (err === null || typeof err !== 'object') return '';
  const e = err as { name?: unknown; code?: unknown; __type?: unknown };
  if (typeof e.name === 'string' && e.name !== 'Error') return e.name;
  if (typeof e.code === 'string') return e.code;
  return typeof e.__type === 'string' ? e.__type.slice(e.__type.lastIndexOf('#') + 1) : '';
}

/** A condition expression that did not hold: the one answer the store expects and reads. */
export const conditionFailed = (err: unknown) => errorName(err) === 'ConditionalCheckFailedException';

const THROTTLED = new Set([
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'RequestLimitExceeded',
  'Throttling',
  'TooManyRequestsException',
  'LimitExceededException',
  'TransactionConflictException',
]);
const AUTH = new Set([
  'UnrecognizedClientException',
  'InvalidSignatureException',
  'ExpiredTokenException',
  'ExpiredToken',
  'InvalidClientTokenId',
  'MissingAuthenticationTokenException',
  'IncompleteSignatureException',
  'CredentialsProviderError',
]);

/** The store's error for `what` (a store operation) failing with `err`, on `table`. */
export function dynamoFailure(table: string, what: string, err: unknown): StoreUnavailableError {
  if (err instanceof StoreUnavailableError) return err;
  const name = errorName(err);
  const message = err instanceof Error ? err.message : String(err);
  const said = `(${name ? `${name}: ` : ''}${message})`;
  const store = `onceonly: DynamoDB store could not ${what}`;
  if (name === 'ResourceNotFoundException') {
    return new StoreMisconfiguredError(
      'store_missing_table',
      `${store}: the table "${table}" does not exist in this account and region ${said}; create it with createDynamoDbTable({ client, table: '${table}' }) or the CloudFormation snippet in docs/dynamodb.md (partition key "pk" of type S, TTL on "ttl"), or give dynamoDbStore the right table and region`,
      { cause: err },
    );
  }
  if (
    name === 'AccessDeniedException' ||
    name === 'AccessDenied' ||
    /not authorized to perform/i.test(message)
  ) {
    return new StoreMisconfiguredError(
      'store_permission_denied',
      `${store}: the credentials may not use the table "${table}" ${said}; allow dynamodb:GetItem, dynamodb:PutItem, dynamodb:UpdateItem and dynamodb:DeleteItem on it (dynamodb:DescribeTable and dynamodb:DescribeTimeToLive for health, dynamodb:Scan for stats and purgeExpired)`,
      { cause: err },
    );
  }
  if (AUTH.has(name)) {
    return new StoreMisconfiguredError(
      'store_auth_failed',
      `${store}: DynamoDB refused the client's credentials ${said}; check the access key, the session token's expiry and the region the client signs for`,
      { cause: err },
    );
  }
  if (
    name === 'ValidationException' &&
    /key element does not match the schema|missing the key/i.test(message)
  ) {
    return new StoreMisconfiguredError(
      'store_missing_table',
      `${store}: the table "${table}" has another key schema ${said}; onceonly's table has one partition key "pk" of type S and no sort key: create one with createDynamoDbTable or the snippet in docs/dynamodb.md`,
      { cause: err },
    );
  }
  if (name === 'ValidationException' && /specified index/i.test(message)) {
    return new StoreMisconfiguredError(
      'store_missing_table',
      `${store}: the table "${table}" has no index "inbox" ${said}; the inbox needs the global secondary index "inbox" (partition key "iq" S, sort key "idue" N): add it as in docs/dynamodb.md (createDynamoDbTable makes it on a new table)`,
      { cause: err },
    );
  }
  if (THROTTLED.has(name)) {
    return new StoreUnavailableError(
      `${store}: DynamoDB throttled the request ${said}, after the client's own retries; it passes with the load: raise the table's capacity (or use on-demand), or the client's maxAttempts`,
      { cause: err },
    );
  }
  const status = (err as { $metadata?: { httpStatusCode?: number } } | null)?.$metadata?.httpStatusCode;
  if (status !== undefined) {
    return new StoreUnavailableError(
      `${store}: DynamoDB answered an error ${said}; it may pass: if it persists, check the service's health and the request`,
      { cause: err },
    );
  }
  return new StoreUnavailableError(
    `${store}: DynamoDB could not be reached ${said}; check the client's region and endpoint and this process's network`,
    { cause: err },
  );
}
