/**
 * Launching turns: what is refused before anything starts, lazy run's exit codes for CI, a
 * project Dockerfile's build shown as progress, and lazy pair resuming a task's session on
 * the host. Real Docker engine, real Claude Code, mock provider on loopback.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { TEST_IMAGES } from "../helpers/env";
import { dockerAnthropic, launched, teardown } from "../helpers/fixtures";
import { Project, sh, until } from "../helpers/lazy";
import type * as Mock from "../helpers/providers";

const KEY = "sk-ant-api03-REALLAUNCH-" + "l".repeat(71) + "AA";
const TOOLS = `${process.env.LAZY_TEST_TOOLS ?? "/opt/lazy-test-tools"}/node_modules/.bin`;
let anthropic: Mock.MockProvider;

const containersOf = (p: Project) => sh("/", `docker ps -aq --filter label=dev.lazy.root=${p.root}`).out.split("\n").filter(Boolean);

function project(extra = ""): Project {
  const p = new Project({
    toml: `[container]\nbase = "${TEST_IMAGES.node}"\n\n[proxy.upstreams]\nanthropic = "${anthropic.url}"\n${extra}`,
  });
  sh(p.root, "git -c user.name=Dev -c user.email=dev@example.com commit -q --allow-empty -m init");
  projects.push(p);
  return p;
}

beforeAll(async () => {
  anthropic = await dockerAnthropic();
});

afterAll(() => teardown(projects, anthropic));
/** Every project a test made, its containers removed after the file. */
const projects: Project[] = [];

describe("launching a turn", () => {
  test("a missing credential refuses before any container starts, naming the slot and the command; lazy run exits 5", async () => {
    const p = project();
    await p.ok(["task", "add", "anything", "--code", "no-key"]);
    const r = await p.run(["start", "no-key"]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('needs the "anthropic" credential');
    expect(r.stderr).toContain("lazy auth set anthropic");
    expect(containersOf(p)).toEqual([]);
    // A refused first launch leaves no queued task: it says failed, with the reason.
    const shown = await p.json(["task", "show", "no-key"]);
    expect(shown.task.status).toBe("failed");
    expect(shown.events.at(-1).data.error).toContain('needs the "anthropic" credential');
    const run = await p.run(["run", "anything else"]);
    expect(run.code).toBe(5);
    expect(run.stderr).toContain("lazy auth set anthropic");
    expect((await p.json<any[]>(["task", "list"])).filter((t) => t.status === "queued")).toEqual([]);
    // The user's shell exports the key, but the daemon was started without it: say so.
    const exported = await p.run(["run", "with the key exported"], { env: { ANTHROPIC_API_KEY: KEY } });
    expect(exported.code).toBe(5);
    expect(exported.stderr).toContain(
      "This shell exports ANTHROPIC_API_KEY, but the running daemon was started without it: run lazy daemon restart from this shell",
    );
    expect(exported.stderr).not.toContain(KEY);
  }, 120_000);

  test("a project with no commit yet: the launch is refused before a task is stored (the preflight), naming the cause; no container is made", async () => {
    const p = new Project({
      toml: `[container]\nbase = "${TEST_IMAGES.node}"\n\n[proxy.upstreams]\nanthropic = "${anthropic.url}"\n`,
      commit: false,
    });
    projects.push(p);
    await p.setCredential("anthropic", KEY);
    const r = await p.run(["task", "add", "anything", "--code", "no-commit"]);
    expect(r.code).toBe(4);
    expect(r.stderr).toContain("has no commit yet: a task's worktree starts from HEAD");
    expect(containersOf(p)).toEqual([]);
    // The daemon goes on answering, and holds no task.
    expect(await p.json<any[]>(["task", "list"])).toEqual([]);
  });

  test("a project Dockerfile whose RUN fails: lazy run exits 4 with the failing command's own error line, and leaves no queued task", async () => {
    const p = project();
    // The Dockerfile first: lazy trust (writeToml) approves the Dockerfile it names by its contents.
    await Bun.write(
      `${p.root}/Dockerfile.broken`,
      `FROM ${TEST_IMAGES.node}\nRUN echo fine-${crypto.randomUUID()}\nRUN echo "E: Unable to locate package no-such-package" >&2; exit 100\nRUN true\n`,
    );
    p.writeToml(`[container]\ndockerfile = "Dockerfile.broken"\n\n[proxy.upstreams]\nanthropic = "${anthropic.url}"\n`);
    await p.setCredential("anthropic", KEY);
    const r = await p.run(["run", "build me"]);
    expect(r.code, r.stderr).toBe(4);
    expect(r.stderr).toContain("E: Unable to locate package no-such-package");
    expect(r.stderr).toMatch(/failed at step 3\/\d+ \(RUN echo "E: Unable/);
    expect(r.stderr).toMatch(/ {2}Step 2\/\d+ : RUN echo fine-/); // the progress lines came first
    expect(r.stderr).not.toContain("\x1b");
    const tasks = await p.json<any[]>(["task", "list"]);
    expect(tasks.map((t) => t.status)).toEqual(["failed"]);
    expect(containersOf(p)).toEqual([]);
  }, 300_000);

  test("lazy run for CI: 0 with the result when the turn finishes, 3 when the agent fails", async () => {
    const p = project();
    await p.setCredential("anthropic", KEY);
    anthropic.answer({ text: "All done from CI." });
    const ok = await p.run(["run", "Say you are done", "--json"]);
    expect(ok.code, ok.stderr).toBe(0);
    const out = JSON.parse(ok.stdout);
    expect(out.status).toBe("done");
    expect(out.result).toContain("All done from CI.");
    const human = await p.run(["run", "Say it again"]);
    expect(human.code).toBe(0);
    expect(human.stdout.trim()).toBe("All done from CI.");

    anthropic.behavior = {
      kind: "status",
      status: 400,
      body: { type: "error", error: { type: "invalid_request_error", message: "this model does not exist" } },
    };
    const bad = await p.run(["run", "Fail please", "--json"]);
    expect(bad.code).toBe(3);
    expect(JSON.parse(bad.stdout).status).toBe("failed");
    anthropic.reset();
    // The help documents the codes.
    // The description is folded to the terminal's width: read it as one line.
    const help = { stdout: (await p.ok(["run", "--help"])).stdout.replace(/\s+/g, " ") };
    for (const code of [
      "0 the turn finished",
      "3 the agent failed",
      "4 the launch was refused",
      "5 a credential is missing",
      "6 the proxy is unavailable",
    ])
      expect(help.stdout).toContain(code);
    // Closing the last task removes the project's network (Docker has room for few).
    const slug = p.stateDir.split("/").at(-1);
    expect(sh("/", `docker network inspect lazy-${slug}`).code).toBe(0);
    for (const t of await p.json<any[]>(["task", "list"])) await p.ok(["close", t.id]);
    expect(containersOf(p)).toEqual([]);
    expect(sh("/", `docker network inspect lazy-${slug}`).code).not.toBe(0);
    // The first turn on a fresh machine builds lazy's default image (npm installs included).
  }, 900_000);

  test("a project Dockerfile is built with progress shown; a harness the image lacks refuses the launch after the build (exit 4), naming it", async () => {
    const p = project(`dockerfile = "Dockerfile.lazy"\n`.replace(/^/, ""));
    // [container] holds both base and dockerfile here: base only matters for lazy's own image.
    await Bun.write(`${p.root}/Dockerfile.lazy`, `FROM ${TEST_IMAGES.node}\nRUN echo build-${crypto.randomUUID()} > /build-id\nRUN true\n`);
    p.writeToml(`[container]\ndockerfile = "Dockerfile.lazy"\n\n[proxy.upstreams]\nanthropic = "${anthropic.url}"\n`);
    await p.setCredential("anthropic", KEY);
    await p.ok(["task", "add", "no claude here", "--code", "bare-image"]);
    const r = await p.run(["start", "bare-image"]);
    // The image was not there for the preflight at add: its harness is checked once it is built (issue 37).
    expect(r.code, r.stderr).toBe(4);
    expect(r.stderr).toContain("The claude harness does not run in the image lazy-project/");
    // Not a terminal: each build step a plain line, before the refusal.
    expect(r.stderr).toContain("Building the task image from the project's Dockerfile.lazy");
    expect(r.stderr).toMatch(/\n {2}Step 2\/\d+ : RUN echo build-/);
    expect(r.stderr).not.toContain("\r");
    const t = (await p.json(["task", "show", "bare-image"])).task;
    expect(t.status).toBe("failed");
    // The image is there now: the next add is refused by the preflight, storing nothing.
    const again = await p.run(["task", "add", "still no claude", "--code", "refused"]);
    expect(again.code).toBe(4);
    expect(again.stderr).toContain("The claude harness does not run in the image lazy-project/");
    expect((await p.json<any[]>(["task", "list"])).map((x) => x.code)).toEqual(["bare-image"]);
    // On a terminal the steps share one updating line: carriage returns, no escape bytes.
    await Bun.write(`${p.root}/Dockerfile.lazy`, `FROM ${TEST_IMAGES.node}\nRUN echo tty-${crypto.randomUUID()}\nRUN true\n`);
    expect(p.trust().code).toBe(0); // the person approves the Dockerfile they changed
    await p.ok(["task", "add", "again on a terminal", "--code", "tty-image"]);
    const tty = await p.onTerminal(["start", "tty-image"]);
    expect(tty).toMatch(/\r {2}Step 3\/\d+ : RUN true/);
    // Nothing but lazy's own colour of its "lazy:" prefix.
    expect(tty.replace("\x1b[31mlazy:\x1b[0m", "lazy:")).not.toContain("\x1b");
    expect(tty).toContain("The claude harness does not run in the image");
    const events = (await p.json(["task", "show", "bare-image"])).events;
    const builds = events.filter((e: any) => e.kind === "build");
    expect(builds[0].data.what).toContain("Dockerfile.lazy");
    expect(builds.some((e: any) => /^Step \d+\/\d+/.test(e.data.progress ?? ""))).toBe(true);
    const last = events.filter((e: any) => e.kind === "status").at(-1);
    expect(last.data.launch).toBe("refused");
    expect(last.data.error).toContain("claude --version could not start");
  }, 300_000);

  test("a project Dockerfile's image is built again when a file it COPYs changes, and reused while none does", async () => {
    const p = project();
    await Bun.write(`${p.root}/Dockerfile.copy`, `FROM ${TEST_IMAGES.node}\nCOPY greeting.txt /greeting.txt\n`);
    await Bun.write(`${p.root}/greeting.txt`, "one\n");
    sh(p.root, "git add -A && git -c user.name=Dev -c user.email=dev@example.com commit -qm copy");
    p.writeToml(`[container]\ndockerfile = "Dockerfile.copy"\n\n[proxy.upstreams]\nanthropic = "${anthropic.url}"\n`);
    await p.setCredential("anthropic", KEY);
    // The image has no claude: refused by the preflight, at the add once the image is built and
    // current, else at the start, after its build (issue 37).
    const start = async (code: string) => {
      const add = await p.run(["task", "add", "the image has no claude", "--code", code]);
      const r = add.code === 0 ? await p.run(["start", code]) : add;
      expect(r.code, r.stderr).toBe(4);
      expect(r.stderr).toContain("The claude harness does not run in the image");
      return r.stderr;
    };
    const first = await start("copy-one");
    expect(first).toContain("Building the task image from the project's Dockerfile.copy");
    const tag = (await p.json(["task", "show", "copy-one"])).events.find((e: any) => e.kind === "build" && e.data.image)?.data.image;
    expect(tag).toMatch(/^lazy-project\//);
    const greeting = () => sh("/", `docker run --rm --entrypoint cat ${tag} /greeting.txt`).out.trim();
    expect(greeting()).toBe("one");
    // Nothing it copies changed: the image is reused, nothing is built.
    expect(await start("copy-same")).not.toContain("Building the task image");
    // The file it copies changed (not committed: the context is the checkout as it is).
    await Bun.write(`${p.root}/greeting.txt`, "two\n");
    // A file of the build context changed since lazy trust: nothing is built until the person approves it.
    await p.ok(["task", "add", "the image has no claude", "--code", "copy-untrusted"]);
    const refused = await p.run(["start", "copy-untrusted"]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain("greeting.txt (changed)");
    expect(refused.stderr).not.toContain("Building the task image");
    expect(p.trust().code).toBe(0);
    const third = await start("copy-two");
    expect(third).toContain("The task image is out of date: the files its Dockerfile copies changed since it was built.");
    expect(third).toContain("Building the task image from the project's Dockerfile.copy");
    expect(greeting()).toBe("two");
    expect((await p.ok(["logs", "copy-two"])).stdout).toContain(
      `${tag} is out of date: the files its Dockerfile copies changed since it was built`,
    );
  }, 300_000);

  test("lazy pair runs the task's harness on the host in its worktree, resuming its session", async () => {
    const p = project();
    await p.setCredential("anthropic", KEY);
    anthropic.answer({ text: "First turn in the container." });
    await launched(p, "pair-me", "Remember the word pineapple");
    await until(async () => (await p.json(["task", "show", "pair-me"])).task.status === "done", 300_000, "the container turn");
    anthropic.answer({ text: "Resumed on the host." });
    const r = await p.run(["pair", "pair-me", "--", "-p", "what was the word?", "--output-format", "json"], {
      env: { PATH: `${TOOLS}:${process.env.PATH}` },
    });
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).result).toContain("Resumed on the host.");
    const body = anthropic.received.find((x) => x.method === "POST")!.body;
    // The earlier turn's conversation came along: the session was resumed.
    expect(body).toContain("Remember the word pineapple");
    expect(body).toContain("First turn in the container.");
    expect(anthropic.received.find((x) => x.method === "POST")!.headers["x-api-key"]).toBe(KEY);
    const row = (await p.json(["stats", "audit"])).rows.at(-1);
    expect(row).toMatchObject({ role: "host", taskId: null });
  }, 300_000);

  test("lazy doctor names the engine kind and whether placeholders are pinned", async () => {
    const p = project();
    await p.ok(["daemon", "start"]); // doctor reads a running daemon; it starts none (issue 37)
    const d = await p.run(["doctor"]);
    expect(d.stdout).toContain("native Linux Docker");
    expect(d.stdout).toContain("pinned to its container's address");
    const js = JSON.parse((await p.run(["doctor", "--json"])).stdout);
    expect(js.findings.map((f: any) => f.check)).toEqual(expect.arrayContaining(["config", "daemon", "proxy", "secrets", "docker"]));
  }, 60_000);
});
