/**
 * The agent sees the repository, not the checkout. Beside the code the person keeps a
 * git-ignored `.env` with a key in it, and the git folder's config carries a token (CI's
 * checkout writes one as `http.…extraheader`). The agent, root in its container through its
 * sudo, searches the container's whole filesystem for both values (and its processes'
 * environments): neither is anywhere. A git-ignored file the project lists in
 * `.worktreeinclude` is in the worktree, and the same search finds it there (the search
 * works). Once with a checkout the agent's uid could read (every checkout when lazy is not
 * root), once with a 0700 `mktemp -d` checkout as CI has it (lazy as root). lazy's own calls
 * read the committed tree at HEAD, never the checkout: the same search in a `lazy ask`'s
 * container finds neither. Real Claude Code,
 * real containers, a mock provider; the search's patterns never spell the values out, so the
 * command's own text (in the turn's events, the transcript) does not match.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bash, containerProject, launched, scratched, settledAs, teardown } from "../helpers/fixtures";
import { type Project, sh, until } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

const KEY = `sk-ant-api03-CHECKOUTSECRETS-${"s".repeat(61)}AA`;
const ENV = "ENVSECRET-5f0c2a9e17b3d48c";
const TOKEN = "EXTRAHEADER-0b7e41c9a2d365f8";
const INCLUDED = "INCLUDEDVALUE-93ad07c51e2b6f4a";
/** The value as a pattern that does not match its own text: `ENVS[E]CRET-…`. */
const pattern = (v: string) => `${v.slice(0, 4)}[${v[4]}]${v.slice(5)}`;

const SEARCH = [
  `sudo grep -rlsI --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev -e '${pattern(ENV)}' -e '${pattern(TOKEN)}' -e '${pattern(INCLUDED)}' / > /tmp/found.txt`,
  `sudo sh -c "cat /proc/[0-9]*/environ | tr '\\\\0' '\\\\n' | grep -c -e '${pattern(ENV)}' -e '${pattern(TOKEN)}'" > /tmp/environ.txt`,
  "cp /tmp/found.txt found.txt; cp /tmp/environ.txt environ.txt; git add -f found.txt environ.txt; git commit -qm search",
].join("; ");

let mock: Mock.MockProvider;
const made: string[] = [];
const projects: Project[] = [];

beforeAll(async () => {
  mock = await Mock.anthropic();
});

afterAll(() => teardown(projects, mock, scratched(made)));

/** A project with the secrets in place, a task whose agent searched for them: what it found. */
async function searched(code: string, root?: string): Promise<{ p: Project; found: string[]; environ: string }> {
  const p = await containerProject(mock, KEY, {
    root,
    ignore: ["lazy.toml", ".env", ".env.included"],
    files: (dir) => {
      writeFileSync(join(dir, ".env"), `API_KEY=${ENV}\n`);
      writeFileSync(join(dir, ".env.included"), `VALUE=${INCLUDED}\n`);
      writeFileSync(join(dir, ".worktreeinclude"), ".env.included\n");
    },
  });
  projects.push(p);
  sh(p.root, `git config http.https://github.com/.extraheader 'AUTHORIZATION: basic ${TOKEN}'`);
  mock.reply = bash("searched.", SEARCH, "search");
  await launched(p, code, "search the container");
  await settledAs(p, code);
  const found = sh(p.root, `git show lazy/${code}:found.txt`).out.split("\n").filter(Boolean);
  return { p, found, environ: sh(p.root, `git show lazy/${code}:environ.txt`).out.trim() };
}

/** The search found the included value in the worktree, where .worktreeinclude put it (it works), and nothing else anywhere. */
function expectOnlyIncluded(s: { p: Project; found: string[]; environ: string }, code: string): void {
  expect(s.found).toEqual([join(s.p.stateDir, "worktrees", code, ".env.included")]);
  expect(s.environ).toBe("0");
}

describe("a git-ignored secret in the checkout is not the agent's to read", () => {
  test("a checkout the agent's uid could read: .env and the git config's token are nowhere in the container; .worktreeinclude's file is in the worktree", async () => {
    const s = await searched("env-open");
    expectOnlyIncluded(s, "env-open");
  }, 600_000);

  test("lazy's own call (lazy ask) reads the committed tree, not the checkout: .env and the token are nowhere in its container", async () => {
    const p = projects[0]!;
    mock.answer({ text: "An answer." });
    mock.behavior = { kind: "silent-then-stream", firstByteDelayMs: 6000, gapMs: 0 };
    const asking = p.run(["ask", "What does this project hold?"]);
    await until(() => mock.received.some((x) => x.method === "POST") || undefined, 180_000, "the call's model request");
    const id = await until(
      () => sh("/", `docker ps -q --filter label=dev.lazy.root=${p.root} --filter name=-call-`).out.trim().split("\n")[0] || undefined,
      10_000,
      "the call's container",
    );
    const names = sh("/", `docker exec -u 0 ${id} ls -A ${p.root}`).out.split("\n").filter(Boolean).sort();
    const found = sh(
      "/",
      `docker exec -u 0 ${id} sh -c "grep -rlsI --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev -e ${ENV} -e ${TOKEN} /; echo scanned"`,
    ).out;
    const r = await asking;
    mock.reset();
    expect(r.code, r.stderr).toBe(0);
    expect(names).toEqual([".gitignore", ".worktreeinclude", "README.md"]);
    expect(found.trim()).toBe("scanned");
  }, 600_000);

  test("a 0700 mktemp -d checkout, as CI has it: the same", async () => {
    const outer = realpathSync(mkdtempSync(join(tmpdir(), "lazy-ci-")));
    made.push(outer);
    const s = await searched("env-ci", outer);
    expectOnlyIncluded(s, "env-ci");
  }, 600_000);
});
