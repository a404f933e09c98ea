/** `onceonly inspect`: placeholder replaced below. */
export async function inspect(_argv: readonly string[]): Promise<number> {
  throw new Error('inspect is not built yet');
}
