/**
 * Which of two lazy versions is the newer: a CLI newer than its project's daemon restarts it
 * (client.ts); an older one never does, since a store migrated forward is not an older
 * binary's to open. Versions are `MAJOR.MINOR.PATCH[-PRE]`; anything else compares as text.
 */

const parse = (v: string) => /^v?(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?(?:\+.*)?$/.exec(v.trim());

/** > 0 when a is newer than b, < 0 when older, 0 when the same. */
export function compare(a: string, b: string): number {
  const x = parse(a);
  const y = parse(b);
  if (!x || !y) return a === b ? 0 : a < b ? -1 : 1;
  for (let i = 1; i <= 3; i++) {
    const d = Number(x[i]) - Number(y[i]);
    if (d) return d;
  }
  // A release is newer than its pre-releases (1.0.0 > 1.0.0-rc.1).
  const [p, q] = [x[4], y[4]];
  if (p === q) return 0;
  if (p === undefined) return 1;
  if (q === undefined) return -1;
  return p.localeCompare(q, "en", { numeric: true });
}
