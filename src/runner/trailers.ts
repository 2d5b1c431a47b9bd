/**
 * What `lazy accept` says on its merge commit about where the work came from ([provenance]
 * trailers): `Lazy-Task` (the task's code, else its id), `Lazy-Model` (each model that served
 * the task's requests, as the answers named it, most tokens first: the usage_days counters),
 * `Lazy-Candidate` (a best-of-N candidate: its place in its group) and `Co-Authored-By` (the
 * harness's own identity, harness/ `coAuthor`). Every value comes from lazy's records; a value
 * that is not one line of plain text is left out, never cleaned up into something it was not.
 * The agent's own commits keep their messages (their trailers, a Co-Authored-By among them) as
 * the agent wrote them: the merge keeps those commits; lazy's trailers are the merge's alone.
 */
import type { Database } from "bun:sqlite";
import type { Config } from "../config";
import { ranOn } from "../export";
import * as Git from "../git";
import { coAuthor } from "../harness";
import { modelsOfTask } from "../spending";
import { type Task, Tasks } from "../store";

/** At most this many Lazy-Model trailers (a harness's small model, a fallback's, …). */
const MAX_MODELS = 4;
/** A model name as a trailer may carry it: what providers name their models with. */
const MODEL = /^[A-Za-z0-9][\w.:/@+-]{0,127}$/;

export function acceptTrailers(db: Database, config: Config, task: Task): Git.Trailer[] {
  const want = new Set<string>(config.provenance.trailers);
  const out: Git.Trailer[] = [];
  const add = (key: string, value: string | null | undefined) => {
    if (want.has(key) && value && Git.trailerValue(value)) out.push([key, value]);
  };
  add("Lazy-Task", task.code ?? task.id);
  for (const m of modelsOfTask(db, task.id)
    .filter((m) => m.requests > 0 && MODEL.test(m.model))
    .slice(0, MAX_MODELS))
    add("Lazy-Model", m.model);
  if (task.group) {
    const group = Tasks.inGroup(db, task.group);
    const place = group.findIndex((t) => t.id === task.id);
    if (place !== -1) add("Lazy-Candidate", `${place + 1}/${group.length} of ${task.group}`);
  }
  add("Co-Authored-By", harnessOf(db, config, task));
  return out;
}

/** The co-author of the harness the task ran on (export's `ranOn`); null when that profile is gone from lazy.toml. */
function harnessOf(db: Database, config: Config, task: Task): string | null {
  const { harness } = ranOn(db, config, task);
  return harness && coAuthor(harness);
}
