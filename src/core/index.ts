export { bytesEqual, newToken, sha256Hex } from './crypto.js';
export { type Duration, parseDuration, parsePositiveDuration } from './duration.js';
export {
  assertVersion,
  type Claim,
  type ClaimOptions,
  createLease,
  type Lease,
  type RecordOptions,
  type RecordView,
  type Store,
  sameFingerprint,
} from './types.js';
