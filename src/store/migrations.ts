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
];
