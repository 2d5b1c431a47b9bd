/**
 * `lazy prune`: the daemon removes what ended tasks (accepted, rejected, closed) and old image
 * builds left: stopped containers, worktrees and state folders, images lazy built that nothing
 * uses (runner/prune.ts). A task that can still run or be reviewed is never touched.
 * `--dry-run` lists the same and the space it would free; nothing is removed.
 */
import { human } from "../../disk";
import type { Pruned, PruneResult } from "../../runner";
import { findProjectRoot } from "../../util/paths";
import * as Client from "../client";
import { command, jsonArg, print, printJson, setExitCode, table } from "../command";
import { say } from "../voice";

const row = (r: Pruned) => [`  ${r.kind}`, r.name, r.task ? `task ${r.task}` : "", human(r.bytes)];

export const prune = command({
  meta: {
    name: "prune",
    description: "Remove what ended tasks and old image builds left: stopped containers, worktrees, unused images (--dry-run lists them)",
  },
  args: {
    "dry-run": { type: "boolean", alias: "n", description: "List what would be removed and the space it frees; remove nothing" },
    ...jsonArg,
  },
  async run({ args }) {
    const dryRun = !!args["dry-run"];
    const c = await Client.connect(findProjectRoot());
    const r = await c.request<PruneResult>("POST", "/api/prune", { dryRun }, 30 * 60_000);
    if (r.failed.length) setExitCode(1);
    if (args.json) {
      printJson(r);
      return;
    }
    const live =
      r.live > 0
        ? ` ${r.live} task${r.live === 1 ? "" : "s"} can still run or be reviewed: nothing of ${r.live === 1 ? "it" : "theirs"} was touched (lazy close or lazy reject ends one).`
        : "";
    if (!r.removed.length && !r.failed.length) {
      print(`Nothing to prune.${live}`);
      return;
    }
    if (r.removed.length) {
      print(dryRun ? "Would remove:" : "Removed:");
      print(table(r.removed.map(row)));
      print(`${dryRun ? "That would free" : "Freed"} ${human(r.bytes)}.${live}${dryRun ? " Run lazy prune to remove them." : ""}`);
    }
    for (const f of r.failed)
      say.error(
        `could not remove ${f.kind} ${f.name}${f.task ? ` (task ${f.task})` : ""}: ${f.error}. Remove it yourself (docker rm / docker rmi / rm -r), or run lazy prune again.`,
      );
  },
});
