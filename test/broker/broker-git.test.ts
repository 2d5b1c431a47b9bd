/**
 * Issue 36's first proof: a private git host served over HTTPS by git's own `http-backend`
 * behind nginx, with basic auth and a CA of its own (test/helpers/git-https.ts). A task's agent
 * (real Claude Code in a real container, told by a mock provider what to run) clones the app
 * with its private submodule, commits, pushes `lazy/<task>` and then tries `main`, all with
 * git's own client, through lazy's egress proxy and broker. The server's refs and access log
 * show what happened: the branch landed, `main` did not move and the push to it never reached
 * the server, and the real token reached the server while the container held only a
 * placeholder (searched for over the container's whole filesystem and every process's
 * environment, as root through the agent's sudo). The daemon resolves the host's name through
 * LAZY_RESOLVE (nothing leaves the machine) and trusts the host's CA through NODE_EXTRA_CA_CERTS.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { bash, containerProject, launched, settled, teardown } from "../helpers/fixtures";
import { type GitHost, startGitHost } from "../helpers/git-https";
import { type Project, sh } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

const KEY = `sk-ant-api03-BROKERGIT-${"b".repeat(69)}AA`;
const BASE62 = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
const TOKEN = `ghp_${Array.from(crypto.getRandomValues(new Uint8Array(36)), (b) => BASE62[b % 62]).join("")}`;
/** The token as a pattern that does not match its own text: `ghp_[X]…`. */
const PATTERN = `${TOKEN.slice(0, 4)}[${TOKEN[4]}]${TOKEN.slice(5)}`;
const CODE = "brk1";

let mock: Mock.MockProvider;
let host: GitHost;
let p: Project;
let mainBefore: string;

const show = (file: string) => sh(p.root, `git show lazy/${CODE}:out/${file}`).out;

beforeAll(async () => {
  mock = await Mock.anthropic();
  host = await startGitHost({
    token: TOKEN,
    repos: {
      "owner/app": { files: { "README.md": "the app\n" }, submodule: "owner/lib" },
      "owner/lib": { files: { "lib.txt": "private lib 7f3e\n" } },
    },
  });
  mainBefore = host.refs("owner/app")["refs/heads/main"]!;
  p = await containerProject(mock, KEY, {
    env: { LAZY_RESOLVE: `${host.name}=127.0.0.1`, NODE_EXTRA_CA_CERTS: host.caFile },
    extra: [
      "[[service]]",
      'shape = "github"',
      `hosts = ["${host.name}:${host.port}"]`,
      `url = "https://${host.name}:${host.port}"`,
      'credential = "githost"',
      'repos = ["owner/app", "owner/lib"]',
      "push = true",
      "",
    ].join("\n"),
  });
  p.trust();
  await p.setCredential("githost", TOKEN);
  const W = "$W/out";
  mock.reply = bash(
    "pushed.",
    [
      "W=$(pwd); mkdir -p out; cd /tmp",
      `git clone -q --recurse-submodules ${host.url("owner/app")} app > ${W}/clone.txt 2>&1; echo "exit $?" >> ${W}/clone.txt`,
      `cat app/lib/lib.txt >> ${W}/clone.txt; cd app`,
      "git checkout -q -b work && echo change > change.txt && git add change.txt && git -c user.name=A -c user.email=a@x commit -qm change",
      `git push origin HEAD:refs/heads/lazy/${CODE} > ${W}/push-own.txt 2>&1; echo "exit $?" >> ${W}/push-own.txt`,
      `git push origin HEAD:main > ${W}/push-main.txt 2>&1; echo "exit $?" >> ${W}/push-main.txt`,
      `git push origin HEAD:refs/heads/lazy/other > ${W}/push-other.txt 2>&1; echo "exit $?" >> ${W}/push-other.txt`,
      `printf 'protocol=https\\nhost=${host.name}:${host.port}\\n\\n' | git credential fill > ${W}/credential.txt 2>&1`,
      `git config -l > ${W}/gitconfig.txt 2>&1; env > ${W}/env.txt`,
      `sudo grep -rlsI --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev -e '${PATTERN}' / > ${W}/found.txt`,
      `sudo sh -c "cat /proc/[0-9]*/environ | tr '\\\\0' '\\\\n' | grep -c -e '${PATTERN}'" > ${W}/environ.txt`,
      'cd "$W" && git add -f out && git commit -qm results',
    ].join("; "),
    "clone, push, search",
  );
  await launched(p, CODE, "clone the app and push your branch");
  await settled(p, CODE);
}, 600_000);

afterAll(async () => {
  await teardown(p, mock);
  await host?.stop();
});

describe("a task's git through the broker", () => {
  test("the clone fetched the private app and its private submodule", () => {
    const clone = show("clone.txt");
    expect(clone).toContain("exit 0");
    expect(clone).toContain("private lib 7f3e");
  });

  test("the push of lazy/<task> landed on the server", () => {
    expect(show("push-own.txt")).toContain("exit 0");
    const refs = host.refs("owner/app");
    expect(refs[`refs/heads/lazy/${CODE}`]).toMatch(/^[0-9a-f]{40}$/);
    expect(refs[`refs/heads/lazy/${CODE}`]).not.toBe(mainBefore);
  });

  test("a push to main is refused in git's own words, naming the rule, and main did not move", () => {
    const out = show("push-main.txt");
    expect(out).toContain("[remote rejected]");
    expect(out).toContain(`refs/heads/lazy/${CODE}`);
    expect(out).not.toContain("exit 0");
    expect(host.refs("owner/app")["refs/heads/main"]).toBe(mainBefore);
    // Never reached the server: its log has no receive-pack POST after the task's own push.
    const posts = host
      .log()
      .split("\n")
      .filter((l) => l.includes("POST") && l.includes("git-receive-pack"));
    expect(posts.length).toBe(1);
  });

  test("a push to another task's branch is refused too", () => {
    expect(show("push-other.txt")).toContain("[remote rejected]");
    expect(host.refs("owner/app")["refs/heads/lazy/other"]).toBeUndefined();
  });

  test("the server saw the real token; the container held only a placeholder", () => {
    expect(host.log()).toContain(`x-access-token:${TOKEN}`);
    const cred = show("credential.txt");
    expect(cred).toMatch(/password=ghp_lazy[A-Za-z0-9]{32}/);
    expect(cred).not.toContain(TOKEN);
    // Not github.com: gh reads its enterprise variable for GH_HOST.
    expect(show("env.txt")).toMatch(/GH_ENTERPRISE_TOKEN=ghp_lazy[A-Za-z0-9]{32}\n/);
    expect(show("env.txt")).not.toContain(TOKEN);
    expect(show("gitconfig.txt")).not.toContain(TOKEN);
    expect(show("found.txt").trim()).toBe("");
    expect(show("environ.txt").trim()).toBe("0");
  });

  test("each brokered request is an audit row naming the service, without the query", async () => {
    const r = await p.run(["stats", "audit", "--json", "--limit", "1000"]);
    const rows = JSON.parse(r.stdout).rows.filter((x: any) => x.role === "broker");
    const paths = rows.map((x: any) => `${x.profile} ${x.method} ${x.path} ${x.status}`);
    expect(paths).toContain("github GET /owner/app.git/info/refs 200");
    expect(paths).toContain("github POST /owner/lib.git/git-upload-pack 200");
    expect(rows.every((x: any) => x.taskRef === CODE)).toBe(true);
    expect(JSON.stringify(rows)).not.toContain("service=");
    expect(JSON.stringify(rows)).not.toContain(TOKEN);
  });
});
