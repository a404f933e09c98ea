/** The error classes, defined beside the engine (`lease/` imports nothing outside itself). */
export * from './lease/errors.js';
