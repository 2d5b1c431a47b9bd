/**
 * Prompts of any size and source (issue 30, Deliver 5): `-` (standard input) and `--file F`
 * wherever a prompt or message is taken; an empty one or one over the bound (util/prompt.ts,
 * 100 KiB: the harness gets it as one `docker exec` argument) is refused with the reason before
 * a task is made, by the CLI and by the API alike; a 100 KB prompt from standard input runs a
 * real Claude Code turn in a real container and reaches the mock provider whole. In no case is
 * a task left `running` without a turn.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { anthropicProject, hanging, launched, settled, settledAs, teardown } from "../helpers/fixtures";
import type { Project } from "../helpers/lazy";
import type * as Mock from "../helpers/providers";

const KEY = "sk-ant-api03-PROMPTSIZE-" + "p".repeat(68) + "AA";
const BOUND = 100 * 1024;
let anthropic: Mock.MockProvider;
let p: Project;
beforeAll(async () => ({ anthropic, p } = await anthropicProject(KEY)), 120_000);
afterAll(() => teardown(p, anthropic));

const tasks = async () => (await p.json(["task", "list"])) as { code: string | null; status: string }[];

test("an empty prompt, message or question is refused with the reason, and nothing is made", async () => {
  const before = (await tasks()).length;
  for (const args of [
    ["task", "add", ""],
    ["task", "add", "   \n"],
    ["run", "  "],
    ["task", "add", "-"],
    ["ask", "-"],
  ]) {
    const r = await p.run(args, { stdin: args.includes("-") ? "  \n" : undefined });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/The (prompt|question) is empty: say what/);
  }
  const none = await p.run(["task", "add"]);
  expect(none.code).toBe(2);
  expect(none.stderr).toContain("Give the prompt: as an argument, - to read standard input, or --file F.");
  // The API says the same to a caller that is not the CLI.
  await expect(p.api("POST", "/api/tasks", { prompt: " " })).rejects.toThrow(/400 .*The prompt is empty/);
  expect((await tasks()).length).toBe(before);
});

test("a 1 MB prompt is refused with the bound, from stdin, a file or the API; no task is made", async () => {
  const big = "x".repeat(1024 * 1024);
  const file = join(p.root, "big-prompt.txt");
  writeFileSync(file, big);
  const before = (await tasks()).length;
  const fromStdin = await p.run(["task", "add", "-"], { stdin: big });
  expect(fromStdin.code).toBe(2);
  expect(fromStdin.stderr).toContain(`over lazy's bound of ${BOUND} bytes`);
  const fromFile = await p.run(["run", "--file", file]);
  expect(fromFile.code).toBe(2);
  expect(fromFile.stderr).toContain(`The prompt is 1048576 bytes (${file}), over lazy's bound of ${BOUND} bytes`);
  // The API refuses it itself (the dashboard, a script): 400 naming the bound, no task.
  await expect(p.api("POST", "/api/tasks", { prompt: big })).rejects.toThrow(
    new RegExp(`400 .*The prompt is 1048576 bytes, over lazy's bound of ${BOUND} bytes`),
  );
  // One byte over is over; the bound itself is allowed.
  await expect(p.api("POST", "/api/tasks", { prompt: "y".repeat(BOUND + 1) })).rejects.toThrow(/400/);
  expect((await tasks()).length).toBe(before);
  const all = await tasks();
  expect(all.filter((t) => t.status === "running")).toEqual([]);
});

test("--file and the argument together are refused; a missing file says so", async () => {
  const both = await p.run(["task", "add", "do it", "--file", "x.txt"]);
  expect(both.code).toBe(2);
  expect(both.stderr).toContain("Give the prompt as an argument or with --file, not both.");
  const missing = await p.run(["send", "T", "--file", "no-such-file.txt"]);
  expect(missing.code).toBe(2);
  expect(missing.stderr).toContain("Cannot read the message from no-such-file.txt: ENOENT.");
});

test("a 100 KB prompt from standard input runs a real turn, and the mock provider receives it whole; a message from --file too", async () => {
  const marker = "PROMPT-END-MARKER-7731";
  const prompt = `Say ok. ${"lorem ipsum ".repeat(Math.floor((100_000 - 60) / 12))}${marker}`;
  expect(Buffer.byteLength(prompt)).toBeGreaterThan(99_000);
  anthropic.reply = { text: "ok, read it all." };
  anthropic.reset();
  const r = await p.run(["run", "-", "--code", "big", "--json"], { stdin: prompt });
  expect(r.code, r.stderr).toBe(0);
  expect(JSON.parse(r.stdout).status).toBe("done");
  const posts = anthropic.received.filter((q) => q.method === "POST" && q.path.startsWith("/v1/messages"));
  expect(posts.some((q) => q.body.includes(marker) && q.body.includes("lorem ipsum lorem ipsum"))).toBe(true);
  // A follow-up message from a file reaches the same session.
  const msg = join(p.root, "msg.txt");
  writeFileSync(msg, "FOLLOW-UP-FROM-FILE-4410: say ok again.");
  anthropic.reset();
  await p.ok(["send", "big", "--file", msg]);
  const t = (await settled(p, "big", 300_000)).task;
  expect(t.status).toBe("done");
  expect(anthropic.received.some((q) => q.body.includes("FOLLOW-UP-FROM-FILE-4410"))).toBe(true);
}, 900_000);

test("lazy stop says the turn stopped and what the task waits for (a real turn, held by a silent provider)", async () => {
  await hanging(p, anthropic, "halt", "Say ok slowly");
  const r = await p.run(["stop", "halt"]);
  anthropic.behavior = { kind: "ok" };
  expect(r.code, r.stderr).toBe(0);
  expect(r.stdout).toContain(`Stopped task halt's turn: it is waiting (lazy send halt "…" goes on; lazy close halt ends it).`);
  expect((await p.json(["task", "show", "halt"])).task.status).toBe("waiting");
}, 600_000);

test("lazy task show gives the agent's finish summary after a real turn (Claude Code calls lazy's finish tool)", async () => {
  anthropic.answer({
    text: "Finished.",
    toolUse: { name: "mcp__lazy__finish", input: { summary: "Renamed the login form's fields; tests pass." } },
  });
  await launched(p, "fin", "Finish with a summary");
  await settledAs(p, "fin");
  const show = await p.ok(["task", "show", "fin"]);
  expect(show.stdout).toContain("Summary (the agent's finish):\n  Renamed the login form's fields; tests pass.");
  expect(show.stdout).toContain("Branch:  lazy/fin (tip ");
  expect((await p.json(["task", "show", "fin"])).summary).toBe("Renamed the login form's fields; tests pass.");
  anthropic.reply = { text: "ok." };
}, 600_000);
