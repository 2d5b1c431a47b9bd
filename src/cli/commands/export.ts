/**
 * `lazy export T [-o FILE] [--force]`: the task's evidence bundle (src/export, docs/export.md) in
 * one file, for someone who does not run lazy: the daemon gathers and hashes the parts; here the
 * document is written whole or not at all, 0600 (it holds the task's prompts, diff and requests:
 * as private as the state folder they come from), never over an existing file without --force and
 * never through a symbolic link.
 */
import { resolve } from "node:path";
import { BUDGET_MB, BUDGET_MB_MAX, type Bundle, serialize } from "../../export";
import { writeFileNew } from "../../util/files";
import { findProjectRoot } from "../../util/paths";
import * as Client from "../client";
import { command, jsonArg, printJson } from "../command";
import { say } from "../voice";

export const exportBundle = command({
  meta: {
    name: "export",
    description:
      "Write a task's evidence bundle: diff, trace records, audit rows, usage and cost, review, who accepted it (one JSON file, each part's sha256)",
  },
  args: {
    task: { type: "positional", description: "Task code or hex id prefix (≥ 4 chars)", required: true },
    output: { type: "string", alias: "o", description: "The file to write (default lazy-export-TASK.json here)" },
    force: { type: "boolean", description: "Replace the file if it exists (a symbolic link is never written through)" },
    "max-mb": {
      type: "string",
      description: `What the parts may take of the file, in MiB (default ${BUDGET_MB}, at most ${BUDGET_MB_MAX}): a part past it is cut, and the manifest says so`,
    },
    ...jsonArg,
  },
  async run({ args }) {
    const c = await Client.connect(findProjectRoot());
    const q = args["max-mb"] === undefined ? "" : `?max=${encodeURIComponent(args["max-mb"])}`;
    const b = await c.request<Bundle>("GET", `/api/tasks/${encodeURIComponent(args.task)}/export${q}`, undefined, 10 * 60_000);
    const file = resolve(args.output ?? `lazy-export-${b.manifest.task.code ?? b.manifest.task.id}.json`);
    writeFileNew(file, serialize(b), { replace: !!args.force, mode: 0o600 });
    const cut = b.manifest.parts.filter((p) => p.cut);
    if (cut.length) {
      const ref = b.manifest.task.code ?? b.manifest.task.id;
      const mb = Math.round(b.manifest.budget / 1024 / 1024);
      say.warn(
        `${cut.map((p) => p.name).join(", ")} ${cut.length === 1 ? "was" : "were"} cut: the bundle holds less than lazy has (each part's "why" in the manifest says what was left out).${mb < BUDGET_MB_MAX ? ` lazy export ${ref} --max-mb ${Math.min(BUDGET_MB_MAX, mb * 4)} keeps more (at most ${BUDGET_MB_MAX});` : ""} the whole record stays in lazy: lazy logs ${ref}, lazy stats audit --task ${ref}, and git log or git diff from task.json's base to its tip.`,
      );
    }
    if (args.json) return printJson({ file, manifest: b.manifest });
    const redacted = b.manifest.parts.reduce((n, p) => n + p.redacted, 0);
    say.success(
      `Wrote ${file}: ${b.manifest.parts.length} parts, each with its sha256 in the manifest${redacted ? `; ${redacted} credential(s) or query string(s) taken out` : ""}${b.manifest.left_out.length ? `; left out: ${b.manifest.left_out.map((l) => l.name).join(", ")} ([provenance] prompts = false)` : ""}.`,
    );
  },
});
