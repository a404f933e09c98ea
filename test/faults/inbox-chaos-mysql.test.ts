// Issue 11's never-retrying chaos proof on MariaDB: see support/inbox-chaos.ts.
import { inboxChaosSuite } from './support/inbox-chaos.js';

await inboxChaosSuite('MariaDB/MySQL');
