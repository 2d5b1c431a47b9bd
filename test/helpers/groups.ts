/**
 * A best-of-N group without containers: candidates made by `lazy task add --n`, their branches
 * made by hand in the project (what each agent would have committed), then marked done in the
 * store while the daemon is stopped (a turn that ended). For the compare page, the diff between
 * candidates and Keep one's ranking, which read branches and statuses only.
 */
import { Database } from "bun:sqlite";
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
  await p.ok(["daemon", "stop"]);
  const db = new Database(join(p.stateDir, "store.db"));
  const now = Date.now();
  codes.forEach((c, i) => {
    db.query("UPDATE tasks SET status = 'done' WHERE code = ?").run(c);
    const summary = opts.summaries?.[i];
    if (summary)
      db.query("INSERT INTO events (task_id, at, kind, data) SELECT id, ?, 'finish', ? FROM tasks WHERE code = ?").run(
        now,
        JSON.stringify({ summary }),
        c,
      );
  });
  db.close();
  return codes;
}
