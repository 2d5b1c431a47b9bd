/**
 * `lazy export T [-o FILE] [--force]`: the task's evidence bundle (src/export, docs/export.md) in
 * one file, for someone who does not run lazy: the daemon gathers and hashes the parts; here the
 * document is written whole or not at all, 0600 (it holds the task's prompts, diff and requests:
 * as private as the state folder they come from), never over an existing file without --force and
 * never through a symbolic link.
 */
import { resolve } from "node:path";
import { type Bundle, serialize } from "../../export";
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
    ...jsonArg,
  },
  async run({ args }) {
    const c = await Client.connect(findProjectRoot());
    const b = await c.request<Bundle>("GET", `/api/tasks/${encodeURIComponent(args.task)}/export`, undefined, 10 * 60_000);
    const file = resolve(args.output ?? `lazy-export-${b.manifest.task.code ?? b.manifest.task.id}.json`);
    writeFileNew(file, serialize(b), { replace: !!args.force, mode: 0o600 });
    if (args.json) return printJson({ file, manifest: b.manifest });
    const redacted = b.manifest.parts.reduce((n, p) => n + p.redacted, 0);
    say.success(
      `Wrote ${file}: ${b.manifest.parts.length} parts, each with its sha256 in the manifest${redacted ? `; ${redacted} credential(s) or query string(s) taken out` : ""}${b.manifest.left_out.length ? `; left out: ${b.manifest.left_out.map((l) => l.name).join(", ")} ([provenance] prompts = false)` : ""}.`,
    );
  },
});
