// Issue 11's never-retrying chaos proof on SQLite: see support/inbox-chaos.ts.
import { inboxChaosSuite } from './support/inbox-chaos.js';

await inboxChaosSuite('SQLite');
