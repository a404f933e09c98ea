/**
 * The median of a list of numbers (the mean of the two middle ones for an even count; NaN for none):
 * every bench's per-round figures are summed up by it.
 */
export function median(xs: readonly number[]): number {
  if (xs.length === 0) return Number.NaN;
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}
