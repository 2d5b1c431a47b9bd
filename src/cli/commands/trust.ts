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
import { confirm } from "../confirm";
import { say } from "../voice";

type Pending = Awaited<ReturnType<typeof Trust.approve>>;

/** A key's change as a line: `proxy.upstreams.anthropic: "https://a" → "https://b"`. */
function keyLine(c: Pending["keyChanges"][number]): string {
  if (c.key === Trust.DOCKERFILE_CONTENTS) return `${c.key}: ${c.how}`;
  if (c.how === "added") return `${c.key}: added ${c.now}`;
  if (c.how === "removed") return `${c.key}: removed${c.was ? ` (was ${c.was})` : ""}`;
  return `${c.key}: ${c.was ?? "(the old value was not recorded)"} → ${c.now}`;
}

/** What approving would change, before anything is approved. */
function showPending(p: Pending): void {
  if (p.keyChanges.length) {
    print(p.isNew ? `${p.file} is not trusted yet; it sets:` : `${p.file} changed since you trusted it:`);
    for (const c of p.keyChanges) print(`  ${keyLine(c)}`);
  }
  if (p.files.length) {
    print("Files that go into the task image or its tasks, changed since the last approval:");
    for (const f of p.files) print(`  ${f.path} (${f.how}, ${f.what})`);
  }
}

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
    yes: { type: "boolean", description: "Approve without asking (scripts, CI); the change is still printed first" },
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
    const root = findProjectRoot();
    // What would change is shown first; it is approved only as shown (the digest), once the
    // person says yes (or passed --yes).
    const pending = await Trust.approve(root, undefined, { dryRun: true });
    const asks = pending.keyChanges.length > 0 || pending.files.length > 0;
    if (asks && !args.json) showPending(pending);
    if (asks && !args.yes) {
      // Without a terminal confirm() refuses, naming --yes (exit 2): a script says so itself.
      if (!(await confirm(`Trust ${pending.file} as shown?`))) {
        say.warn("Nothing was trusted.");
        return;
      }
    }
    const r = await Trust.approve(root, undefined, { expect: pending.digest });
    if (args.json) return printJson(r);
    say.success(`Trusted ${r.file} (sha256:${r.sha256.slice(0, 12)}) and the files it builds from.`);
    if (!r.needed) print("It sets no key that needs trust; lazy would have used it anyway.");
    else if (r.isNew) print(`lazy now uses its ${r.bearing.join(", ")}.`);
    else if (!r.changed.length && !r.files.length) print("Nothing that needs trust changed since the last approval.");
  },
});
