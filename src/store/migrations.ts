/**
 * Schema migrations, embedded in the binary: SQL, or a function where rows must be rewritten.
 * Each entry runs once, in order, inside one transaction; PRAGMA user_version records how far a
 * store has come. Append, never edit.
 */
import type { Database } from "bun:sqlite";

export const MIGRATIONS: readonly (string | ((db: Database) => void))[] = [
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
  // The audit trail moves to one row per batch (src/proxy/audit/store.ts). The old table goes
  // when empty; rows in it are packed into batches by the trail when it opens (packLegacy).
  (db) => {
    db.exec(`CREATE TABLE audit_batches (
     id       INTEGER PRIMARY KEY,
     n        INTEGER NOT NULL,
     first_at INTEGER NOT NULL,
     last_at  INTEGER NOT NULL,
     numbers  BLOB NOT NULL,
     strings  BLOB NOT NULL,
     tbl      TEXT NOT NULL
   )`);
    if (!db.query("SELECT 1 FROM audit LIMIT 1").get()) db.exec("DROP TABLE audit");
  },
  // The runner's own records of what the agent's container could otherwise lie about: the
  // worktree's admin folder name (never asked of git in the agent-written worktree) and which
  // turn a human stopped (never a marker file in a folder the agent writes).
  `ALTER TABLE runs ADD COLUMN admin TEXT;`,
  `ALTER TABLE runs ADD COLUMN stopped_turn INTEGER;`,
  // A provider's quota refusal, beside the credential's reading: [usage_pause] holds turns on
  // it until its reset (OpenAI's insufficient_quota carries no usage-limit headers to read).
  `ALTER TABLE readings ADD COLUMN quota TEXT;`,
  // Turns held by [usage_pause]: started by lazy, oldest first, once the window resets.
  `CREATE TABLE held_turns (
     id INTEGER PRIMARY KEY AUTOINCREMENT,
     task_id TEXT NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
     message TEXT,
     at INTEGER NOT NULL,
     credential TEXT,
     window TEXT,
     resets_at INTEGER
   );`,
  // Token counters per UTC day, task, profile and credential: what lazy stats budget and the
  // [budget] limits read. Counters, so the audit's row bound never erases them. task_id and
  // credential are '' where there is none (a host launch; a local model).
  `CREATE TABLE usage_days (
     day TEXT NOT NULL, task_id TEXT NOT NULL, profile TEXT NOT NULL, credential TEXT NOT NULL,
     requests INTEGER NOT NULL DEFAULT 0,
     input_tokens INTEGER NOT NULL DEFAULT 0, output_tokens INTEGER NOT NULL DEFAULT 0,
     cache_read INTEGER NOT NULL DEFAULT 0, cache_write INTEGER NOT NULL DEFAULT 0,
     PRIMARY KEY (day, task_id, profile, credential)
   ) WITHOUT ROWID;
   CREATE INDEX usage_days_task ON usage_days(task_id);`,
  // What a human added to a task's budget (lazy task budget T +N).
  `ALTER TABLE runs ADD COLUMN budget_tokens INTEGER NOT NULL DEFAULT 0;`,
  `ALTER TABLE runs ADD COLUMN budget_usd REAL NOT NULL DEFAULT 0;`,
  // Project memory: short notes agents (MCP memory_write) and people (lazy memory add) keep.
  `CREATE TABLE memory (
     id INTEGER PRIMARY KEY AUTOINCREMENT,
     at INTEGER NOT NULL,
     text TEXT NOT NULL,
     task_id TEXT,
     by TEXT NOT NULL
   );`,
  // What an agent said through MCP that outlives its turn: a question for the human (the task
  // waits on it) and its own summary when it finished.
  `ALTER TABLE runs ADD COLUMN question TEXT;`,
  `ALTER TABLE runs ADD COLUMN summary TEXT;`,
  // The dashboard's task list pages newest first, by status or not (Tasks.page), over 10,000 tasks.
  `CREATE INDEX tasks_created ON tasks(created_at, id);
   CREATE INDEX tasks_status_created ON tasks(status, created_at, id);`,
  // Project memory by design (issue 26): compaction rewrites only notes agents wrote, and the
  // prompt block marks them unverified. Notes compacted before this ('lazy') may hold a person's
  // fact: they count as a person's from now on, and 'lazy' means "compacted from agents' notes".
  `UPDATE memory SET by = 'human' WHERE by = 'lazy';`,
  // Best-of-N (issue 30): the candidates one prompt made are a group, named by the group's code.
  `ALTER TABLE tasks ADD COLUMN grp TEXT;
   CREATE INDEX tasks_grp ON tasks(grp);`,
  // Refusals of callers lazy cannot attribute (no credential, an unknown placeholder, …) are
  // counted per minute, source, reason and status, beside the audit trail and under a bound of
  // their own: a flood of them never evicts a real row (src/proxy/audit/refusals.ts).
  `CREATE TABLE audit_refusals (
     minute   INTEGER NOT NULL,
     source   TEXT NOT NULL,
     reason   TEXT NOT NULL,
     status   INTEGER NOT NULL,
     task_id  TEXT NOT NULL,
     task_ref TEXT NOT NULL,
     count    INTEGER NOT NULL,
     first_at INTEGER NOT NULL,
     last_at  INTEGER NOT NULL,
     method   TEXT NOT NULL,
     path     TEXT NOT NULL,
     PRIMARY KEY (minute, source, reason, status, task_id)
   );
   CREATE INDEX audit_refusals_task ON audit_refusals(task_id, minute);`,
  // Spending priced by the model each request was served (issue 35), never by the profile's
  // config of the day it is read: the counters keep the model. Those kept before are marked
  // ' legacy' (no model name has a space) and priced once by the profile's model at the next
  // start (Usage.stampLegacy).
  `CREATE TABLE usage_days_models (
     day TEXT NOT NULL, task_id TEXT NOT NULL, profile TEXT NOT NULL, credential TEXT NOT NULL, model TEXT NOT NULL,
     requests INTEGER NOT NULL DEFAULT 0,
     input_tokens INTEGER NOT NULL DEFAULT 0, output_tokens INTEGER NOT NULL DEFAULT 0,
     cache_read INTEGER NOT NULL DEFAULT 0, cache_write INTEGER NOT NULL DEFAULT 0,
     PRIMARY KEY (day, task_id, profile, credential, model)
   ) WITHOUT ROWID;
   INSERT INTO usage_days_models SELECT day, task_id, profile, credential, ' legacy', requests, input_tokens, output_tokens, cache_read, cache_write FROM usage_days;
   DROP TABLE usage_days;
   ALTER TABLE usage_days_models RENAME TO usage_days;
   CREATE INDEX usage_days_task ON usage_days(task_id);`,
  // Best-of-N: the [review] check run once on a group's untouched base (issue 37): a check that
  // passes there does not tell candidates apart. One row a group, the latest verdict.
  `CREATE TABLE group_checks (
     grp     TEXT PRIMARY KEY,
     base    TEXT NOT NULL,
     command TEXT NOT NULL,
     ok      INTEGER NOT NULL,
     code    INTEGER NOT NULL,
     ms      INTEGER NOT NULL,
     output  TEXT NOT NULL,
     error   TEXT,
     at      INTEGER NOT NULL
   ) WITHOUT ROWID;`,
];
