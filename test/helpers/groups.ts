/**
 * A best-of-N group without containers: candidates made by `lazy task add --n`, their branches
 * made by hand in the project (what each agent would have committed), then marked done in the
 * store while the daemon is stopped (a turn that ended). For the compare page, the diff between
 * candidates and Keep one's ranking, which read branches and statuses only. A single task made
 * the same way (`handMadeTask`) is what accept's trailers and lazy export read.
 */
import { Database } from "bun:sqlite";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Project } from "./lazy";
import { sh } from "./lazy";

/** The candidates' branches: each a map of file → content committed on top of HEAD (empty: no change). */
export async function handMadeGroup(
  p: Project,
  code: string,
  branches: Record<string, string>[],
  opts: { summaries?: (string | null)[] } = {},
): Promise<string[]> {
  const g = await p.json(["task", "add", "--n", String(branches.length), "--profile", "a", `Group ${code}`, "--code", code]);
  const codes: string[] = g.tasks.map((t: { code: string }) => t.code);
  branches.forEach((files, i) => {
    const branch = `lazy/${codes[i]}`;
    const steps = [`git branch ${branch} HEAD`];
    if (Object.keys(files).length) {
      steps.push(`git checkout -q ${branch}`);
      for (const [f, text] of Object.entries(files)) steps.push(`printf '%s\\n' '${text}' > ${f}`, `git add ${f}`);
      steps.push(`git -c user.name=Agent -c user.email=agent@example.com commit -qm 'work of ${codes[i]}'`, "git checkout -q main");
    }
    const r = sh(p.root, steps.join(" && "));
    if (r.code !== 0) throw new Error(`making ${branch}: ${r.err}`);
  });
  await markDone(p, codes, opts.summaries);
  return codes;
}

/**
 * Tasks whose turn ended, without a turn: the daemon stopped, each marked done in the store (with
 * its agent's `finish` summary, if given). The next command starts the daemon again.
 */
export async function markDone(p: Project, codes: readonly string[], summaries?: (string | null)[]): Promise<void> {
  await p.ok(["daemon", "stop"]);
  const db = new Database(join(p.stateDir, "store.db"));
  const now = Date.now();
  codes.forEach((c, i) => {
    db.query("UPDATE tasks SET status = 'done' WHERE code = ?").run(c);
    const summary = summaries?.[i];
    if (summary)
      db.query("INSERT INTO events (task_id, at, kind, data) SELECT id, ?, 'finish', ? FROM tasks WHERE code = ?").run(
        now,
        JSON.stringify({ summary }),
        c,
      );
  });
  db.close();
}

/**
 * One task made by hand (no container): `lazy task add` on profile `a`, then its branch with one
 * commit per entry (files → content, and the agent's message, any bytes), by "Agent". The commits'
 * ids, oldest first. Mark it done (markDone) to accept it.
 */
export async function handMadeTask(
  p: Project,
  code: string,
  commits: { files: Record<string, string>; message: string }[],
  prompt = `Task ${code}`,
): Promise<string[]> {
  await p.ok(["task", "add", "--profile", "a", prompt, "--code", code]);
  const r = sh(p.root, `git checkout -q -b lazy/${code}`);
  if (r.code !== 0) throw new Error(r.err);
  const ids: string[] = [];
  for (const c of commits) {
    for (const [f, text] of Object.entries(c.files)) writeFileSync(join(p.root, f), text);
    const msg = join(p.root, ".git", "agent-message");
    writeFileSync(msg, c.message);
    const done = sh(
      p.root,
      `git add -- ${Object.keys(c.files).join(" ")} && git -c user.name=Agent -c user.email=agent@example.com commit -q --cleanup=verbatim -F .git/agent-message && git rev-parse HEAD`,
    );
    if (done.code !== 0) throw new Error(done.err);
    ids.push(done.out.trim());
  }
  sh(p.root, "git checkout -q main");
  return ids;
}
