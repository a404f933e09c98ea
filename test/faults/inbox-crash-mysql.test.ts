// Issue 11's SIGKILL proofs of inbox mode on MariaDB: see support/inbox-crash.ts.
import { inboxCrashSuite } from './support/inbox-crash.js';

await inboxCrashSuite('MariaDB');
