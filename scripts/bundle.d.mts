/** The path a bundle of `entry` tagged `tag` is written to (in `.bundles/` of the nearest folder above it with a node_modules). */
export function bundlePath(entry: string, tag: string): string;
/**
 * Bundles `entry` (an absolute path) into {@link bundlePath}; resolves to that path. With
 * `contents`, the entry is that TypeScript instead of the file's (its imports resolved from the
 * entry's folder).
 */
export function bundle(entry: string, tag: string, contents?: string): Promise<string>;
