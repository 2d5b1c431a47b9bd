/**
 * Why the proxy refused a request, read back from its audit row: the cause a person watching
 * (lazy watch, the dashboard) needs, in words. The notes are written by forward.ts and
 * cursor.ts; the prefixes below are theirs, kept in one place.
 */
export const NOTE = {
  grantGone: "unknown or revoked placeholder",
  pinned: (from: string, pinnedIp: string) => `pinned placeholder presented from ${from}, not its container ${pinnedIp}`,
  surface: (reason: string) => `refused: ${reason}`,
  credentialMissing: (name: string) => `credential ${name} missing`,
  unmapped: "no credential mapped",
} as const;

/** The cause of a refusal, or null when the row is not one of lazy's own refusals. */
export function refusalCause(row: { status: number; note: string | null }): string | null {
  const n = row.note;
  if (!n || row.status < 400) return null;
  if (n.startsWith(NOTE.grantGone)) return "grant is gone: the placeholder is unknown or revoked";
  const pinned = /^pinned placeholder presented from (\S+), not its container (\S+)/.exec(n);
  if (pinned) return `pinned placeholder presented from ${pinned[1]}, not from its container ${pinned[2]}`;
  if (n.startsWith("refused: ")) return `path not forwarded: ${n.slice("refused: ".length)}`;
  const missing = /^credential (\S+) missing/.exec(n);
  if (missing) return `credential slot "${missing[1]}" is empty: lazy auth set ${missing[1]}`;
  if (n.startsWith(NOTE.unmapped)) return "no credential mapped for this provider";
  // lazy's egress proxy (src/egress) words its own refusals.
  if (n.startsWith("egress: ")) return n.slice("egress: ".length);
  return null;
}
