/** Terminal output: a two-column table and a progress bar on stderr. */
export function table(title: string, rows: readonly (readonly [string, string | number])[]): string {
  const width = Math.max(...rows.map(([k]) => k.length));
  const valueWidth = Math.max(...rows.map(([, v]) => String(v).length));
  const line = '─'.repeat(width + valueWidth + 5);
  return [
    title,
    line,
    ...rows.map(([k, v]) => `  ${k.padEnd(width)}   ${String(v).padStart(valueWidth)}`),
    line,
  ].join('\n');
}

/** Returns a progress callback drawing `[#####.....] done/total` on stderr. */
export function progressBar(total: number): (done: number, all: number) => void {
  let last = -1;
  return (done) => {
    const pct = Math.floor((done / total) * 100);
    if (pct === last && done !== total) return;
    last = pct;
    const filled = Math.round((done / total) * 30);
    process.stderr.write(`\r  [${'#'.repeat(filled)}${'.'.repeat(30 - filled)}] ${done}/${total} events`);
    if (done >= total) process.stderr.write('\n');
  };
}

/** A table with a label column and one right-aligned column per series (the demo's modes side by side). */
export function grid(
  title: string,
  header: readonly string[],
  rows: readonly (readonly (string | number)[])[],
): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i] ?? '').length)));
  const cell = (v: string | number | undefined, i: number) =>
    i === 0 ? String(v ?? '').padEnd(widths[i]!) : String(v ?? '').padStart(widths[i]!);
  const format = (r: readonly (string | number)[]) => `  ${r.map(cell).join('   ')}`;
  const line = '─'.repeat(widths.reduce((a, w) => a + w + 3, -1) + 2);
  return [title, line, format(header), line, ...rows.map(format), line].join('\n');
}
