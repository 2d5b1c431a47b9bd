/**
 * `lazy trust`: approve this folder's lazy.toml as it is now (direnv's `allow`). Until then a
 * lazy.toml that sets keys deciding where credentials go or what runs is refused, before any
 * daemon starts for it (config/trust.ts). `--show` lists what is trusted.
 */

import { Trust } from "../../config";
import { findProjectRoot } from "../../util/paths";
import { command, jsonArg, print, printJson } from "../command";
import { say } from "../voice";

export const trust = command({
  meta: {
    name: "trust",
    description:
      "Approve this project's lazy.toml as it is now (lazy refuses one that changed keys deciding where credentials go); --show lists what is trusted",
  },
  args: {
    show: { type: "boolean", description: "List the trusted lazy.toml files: path, hash, when, and whether the file still matches" },
    ...jsonArg,
  },
  run({ args }) {
    if (args.show) {
      const list = Trust.list();
      if (args.json) return printJson({ trusted: list });
      if (!list.length) return print("Nothing is trusted yet: lazy trust approves the lazy.toml of the folder you are in.");
      for (const t of list)
        print(
          `${t.file}  sha256:${t.sha256.slice(0, 12)}  trusted ${t.trustedAt}${t.state === "matches" ? "" : t.state === "changed" ? "  (changed since: lazy trust again after looking)" : "  (the file is gone)"}`,
        );
      return;
    }
    const r = Trust.approve(findProjectRoot());
    if (args.json) return printJson(r);
    say.success(`Trusted ${r.file} (sha256:${r.sha256.slice(0, 12)}).`);
    if (!r.needed) print("It sets no key that needs trust; lazy would have used it anyway.");
    else if (r.isNew) print(`lazy now uses its ${r.bearing.join(", ")}.`);
    else if (r.changed.length) print(`Changed since the last approval: ${r.changed.join(", ")}.`);
    else print("Nothing that needs trust changed since the last approval.");
  },
});
