// The published types under TypeScript 5: see published.ts.
import { publishedTypes } from './published.js';

publishedTypes('5');
