/**
 * Schema migrations, embedded in the binary. Each entry runs once, in order, inside one
 * transaction; PRAGMA user_version records how far a store has come. Append, never edit.
 */
export const MIGRATIONS: readonly string[] = [
  `CREATE TABLE tasks (
     id         TEXT PRIMARY KEY,               -- hex
     code       TEXT UNIQUE,                    -- optional human handle, e.g. fix-login
     title      TEXT NOT NULL,
     prompt     TEXT NOT NULL,
     status     TEXT NOT NULL,
     profile    TEXT NOT NULL,
     created_at INTEGER NOT NULL,               -- unix ms
     updated_at INTEGER NOT NULL
   );
   CREATE INDEX tasks_status ON tasks(status);
   CREATE TABLE events (
     id      INTEGER PRIMARY KEY AUTOINCREMENT,
     task_id TEXT NOT NULL REFERENCES tasks(id),
     at      INTEGER NOT NULL,
     kind    TEXT NOT NULL,                     -- created, status, message, tool, result, usage, ...
     data    TEXT NOT NULL DEFAULT '{}'         -- JSON
   );
   CREATE INDEX events_task ON events(task_id, id);`,
  // The proxy's audit trail (bounded by rows and age), token totals per task that outlive it,
  // and the latest usage-limit reading per credential owner.
  `CREATE TABLE audit (
     id          INTEGER PRIMARY KEY AUTOINCREMENT,
     at          INTEGER NOT NULL,
     task_id     TEXT,
     task_ref    TEXT,
     role        TEXT,
     profile     TEXT,
     credential  TEXT,                          -- the credential's label (slot name), never its value
     upstream    TEXT NOT NULL,
     method      TEXT NOT NULL,
     path        TEXT NOT NULL,
     status      INTEGER NOT NULL,
     duration_ms REAL NOT NULL,
     ttfb_ms     REAL,
     bytes_in    INTEGER NOT NULL,
     bytes_out   INTEGER NOT NULL,
     input_tokens INTEGER, output_tokens INTEGER, cache_read INTEGER, cache_write INTEGER,
     retries     INTEGER NOT NULL DEFAULT 0,
     note        TEXT
   );
   CREATE INDEX audit_task ON audit(task_id, id);
   CREATE INDEX audit_at ON audit(at);
   CREATE TABLE task_tokens (
     task_id TEXT PRIMARY KEY,
     requests INTEGER NOT NULL DEFAULT 0,
     input_tokens INTEGER NOT NULL DEFAULT 0, output_tokens INTEGER NOT NULL DEFAULT 0,
     cache_read INTEGER NOT NULL DEFAULT 0, cache_write INTEGER NOT NULL DEFAULT 0
   );
   CREATE TABLE readings (
     owner      TEXT PRIMARY KEY,               -- user:<id>, credential:<ENV VAR>, upstream:<origin>
     credential TEXT,
     upstream   TEXT NOT NULL,
     at         INTEGER NOT NULL,
     status     INTEGER NOT NULL,
     headers    TEXT NOT NULL                   -- JSON of the allowlisted headers only
   );`,
  // A task's run: its container, harness session, turn counter and how far the daemon has
  // read the current turn's events (so a restarted daemon picks up where it left off).
  `CREATE TABLE runs (
     task_id      TEXT PRIMARY KEY REFERENCES tasks(id),
     container_id TEXT,
     session      TEXT,
     turn         INTEGER NOT NULL DEFAULT 0,
     offset       INTEGER NOT NULL DEFAULT 0,
     setup_done   INTEGER NOT NULL DEFAULT 0,
     profile      TEXT
   );`,
  // The audit's age bound is applied once a minute: a scan then costs less than keeping an index
  // on every insert (the proxy's hot path writes one row per request).
  `DROP INDEX audit_at;`,
];
