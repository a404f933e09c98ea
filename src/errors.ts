/** The error classes, defined beside the engine (`core/` imports nothing outside itself). */
export * from './core/errors.js';
