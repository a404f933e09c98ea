import { runInboxConformance } from '../testing/index.js';
import { memoryStore } from './memory.js';

// Every inbox over one memory store shares its entries: the factory hands out the same one.
const store = memoryStore();
await runInboxConformance({ name: 'memoryStore inbox conformance', factory: () => store.inbox! });
