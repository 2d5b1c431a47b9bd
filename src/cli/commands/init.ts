import { existsSync } from "node:fs";
import { join } from "node:path";
import { FILE, starter, Trust } from "../../config";
import { LazyError } from "../../util/errors";
import { writeFileAtomic } from "../../util/files";
import { findProjectRoot } from "../../util/paths";
import { command, print } from "../command";
import { say } from "../voice";

export const init = command({
  meta: { name: "init", description: "Write a commented lazy.toml starter at the project root" },
  args: {},
  async run() {
    const root = findProjectRoot();
    const file = join(root, FILE);
    if (existsSync(file)) throw new LazyError("conflict", `${file} already exists; edit it, or remove it to start over.`);
    writeFileAtomic(file, starter(), 0o644);
    // The person wrote it by running init: it is theirs (config/trust.ts).
    await Trust.approve(root);
    say.success(`Wrote ${file} (trusted: lazy trust --show).`);
    print('Next: lazy daemon start, then lazy task add "what to do".');
  },
});
