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
