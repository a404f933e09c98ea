// Issue 11's never-retrying chaos proof on PostgreSQL: see support/inbox-chaos.ts.
import { inboxChaosSuite } from './support/inbox-chaos.js';

await inboxChaosSuite('PostgreSQL');
