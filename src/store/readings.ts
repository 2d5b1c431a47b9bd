/**
 * The proxy's latest usage-limit reading per credential owner, kept so it survives a restart
 * (proxy/meters/limits.ts holds them in memory and saves them here, debounced). The headers and
 * the quota refusal are JSON; their shapes are the meters' own.
 */
import type { Database } from "bun:sqlite";

/** A reading as stored: headers and quota as JSON text. */
export interface Stored {
  owner: string;
  credential: string | null;
  upstream: string;
  at: number;
  status: number;
  headers: string;
  quota: string | null;
}

export function all(db: Database): Stored[] {
  return db.query("SELECT * FROM readings").all() as Stored[];
}

/** Save these readings, each replacing its owner's, in one transaction. */
export function save(db: Database, readings: Iterable<Stored>): void {
  const upsert = db.query(
    "INSERT INTO readings (owner, credential, upstream, at, status, headers, quota) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(owner) DO UPDATE SET credential = excluded.credential, upstream = excluded.upstream, at = excluded.at, status = excluded.status, headers = excluded.headers, quota = excluded.quota",
  );
  db.transaction(() => {
    for (const r of readings) upsert.run(r.owner, r.credential, r.upstream, r.at, r.status, r.headers, r.quota);
  }).immediate();
}
