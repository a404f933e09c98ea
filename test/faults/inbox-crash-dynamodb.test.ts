// Issue 11's SIGKILL proofs of inbox mode on DynamoDB (dynalite, started by this file): see support/inbox-crash.ts.
import { inboxCrashSuite } from './support/inbox-crash.js';

await inboxCrashSuite('DynamoDB');
