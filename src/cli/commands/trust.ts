/**
 * `lazy trust`: approve this folder's lazy.toml as it is now (direnv's `allow`), with the files
 * beside it that go into the task image or a task (the Dockerfile's build context, what
 * [container] setup names, .worktreeinclude). Until then a lazy.toml that sets keys deciding
 * where credentials go or what runs is refused, before any daemon starts for it, and a build
 * from changed files is refused (config/trust.ts). It says what changed as it approves;
 * `--show` lists what is trusted and what changed since, approving nothing.
 */

import { Trust } from "../../config";
import { findProjectRoot } from "../../util/paths";
import { command, jsonArg, print, printJson } from "../command";
import { say } from "../voice";

export const trust = command({
  meta: {
    name: "trust",
    description:
      "Approve this project's lazy.toml and the files its task image is built from as they are now (lazy refuses changed keys deciding where credentials go, and a build from changed files); --show lists what is trusted and what changed",
  },
  args: {
    show: {
      type: "boolean",
      description: "List the trusted lazy.toml files: path, hash, when, and what changed since (keys, and files the image is built from)",
    },
    ...jsonArg,
  },
  async run({ args }) {
    if (args.show) {
      const list = await Trust.list();
      if (args.json) return printJson({ trusted: list });
      if (!list.length) return print("Nothing is trusted yet: lazy trust approves the lazy.toml of the folder you are in.");
      for (const t of list) {
        print(
          `${t.file}  sha256:${t.sha256.slice(0, 12)}  trusted ${t.trustedAt}${t.state === "matches" ? "" : t.state === "changed" ? "  (changed since: lazy trust again after looking)" : "  (the file is gone)"}`,
        );
        for (const c of t.changes) print(`  ${c}`);
      }
      return;
    }
    const r = await Trust.approve(findProjectRoot());
    if (args.json) return printJson(r);
    say.success(`Trusted ${r.file} (sha256:${r.sha256.slice(0, 12)}) and the files it builds from.`);
    if (!r.needed) print("It sets no key that needs trust; lazy would have used it anyway.");
    else if (r.isNew) print(`lazy now uses its ${r.bearing.join(", ")}.`);
    else if (!r.changed.length && !r.files.length) print("Nothing that needs trust changed since the last approval.");
    if (!r.isNew && r.changed.length) print(`Changed since the last approval: ${r.changed.join(", ")}.`);
    if (r.files.length && !r.isNew) {
      print("Files that go into the task image or its tasks, changed since the last approval:");
      for (const f of r.files) print(`  ${f.path} (${f.how}, ${f.what})`);
    }
  },
});
