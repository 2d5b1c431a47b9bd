/**
 * The task store: bun:sqlite in WAL mode, migrations embedded in the binary, and the daemon
 * its only writer. Tasks, their events, the status rules (status.ts), each task's run, and
 * the turns [usage_pause] holds.
 */
import { Database } from "bun:sqlite";
import { closeSync, existsSync, openSync } from "node:fs";
import { MIGRATIONS } from "./migrations";

export * as AuditBatches from "./audit";
export * as AuditRefusals from "./audit-refusals";
export type { BaseVerdict } from "./group-checks";
export * as GroupChecks from "./group-checks";
export type { Held } from "./held";
export * as HeldTurns from "./held";
export type { Note } from "./memory";
export * as Memory from "./memory";
export * as Readings from "./readings";
export type { Run } from "./runs";
export * as Runs from "./runs";
export * from "./status";
export type { Task, TaskEvent } from "./tasks";
export * as Tasks from "./tasks";
export * as Usage from "./usage";

export function open(file: string): Database {
  // Task prompts and the audit trail are the user's business: 0600, like the rest of the state
  // folder (SQLite gives its -wal and -shm files the database file's mode).
  if (!existsSync(file)) closeSync(openSync(file, "a", 0o600));
  const db = new Database(file, { create: true, strict: true });
  db.exec("PRAGMA journal_mode = WAL");
  db.exec("PRAGMA synchronous = NORMAL");
  db.exec("PRAGMA foreign_keys = ON");
  // The daemon is the only writer, so waiting on a lock would only hide a bug; keep it short.
  db.exec("PRAGMA busy_timeout = 250");
  migrate(db);
  return db;
}

/**
 * Another connection to the store, for a worker thread (the proxy's, the audit's writer): no
 * migrations (the daemon ran them), and it waits up to 5 s for the other writers rather than
 * failing.
 */
export function connect(file: string, o: { strict?: boolean; synchronous?: "NORMAL" } = {}): Database {
  const db = new Database(file, o.strict ? { strict: true } : undefined);
  db.exec("PRAGMA busy_timeout = 5000");
  if (o.synchronous) db.exec(`PRAGMA synchronous = ${o.synchronous}`);
  return db;
}

function migrate(db: Database): void {
  const { user_version } = db.query("PRAGMA user_version").get() as { user_version: number };
  for (let v = user_version; v < MIGRATIONS.length; v++) {
    db.transaction(() => {
      const m = MIGRATIONS[v]!;
      if (typeof m === "string") db.exec(m);
      else m(db);
      db.exec(`PRAGMA user_version = ${v + 1}`);
    }).immediate();
  }
}
