// The published types under TypeScript 7: see published.ts.
import { publishedTypes } from './published.js';

publishedTypes('7');
