/**
 * The first build of lazy's default image, as a new user's first launch sees it: the image has
 * only the harnesses the project's profiles use (a Claude-only project gets a Claude-only image,
 * its tag says so; a codex profile added later builds another), a line before it starts says it
 * is a one-off build with its size and time, and while it builds the build's own output shows
 * under the step's timer, a line at least every 5 s. Real Docker, the test base image; the
 * launch stops at its setup (`exit 7`), right after the build. Against main: no one-off line, no
 * output line without a terminal, and a tag (and image) with all three harnesses.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { TEST_IMAGES } from "../helpers/env";
import { dockerAnthropic, teardown } from "../helpers/fixtures";
import { BIN, Project, sh } from "../helpers/lazy";
import type * as Mock from "../helpers/providers";

const KEY = `sk-ant-api03-FIRSTBUILD-${"f".repeat(70)}AA`;
let anthropic: Mock.MockProvider;
let p: Project;
/** A base of this file's own (the test base and one layer): Docker's cache has no step of the build, as on a fresh machine. */
const BASE = `lazy-test-first/node:${crypto.randomUUID().slice(0, 8)}`;
/** What this file built, removed after it. */
const built: string[] = [BASE];

const toml = (extra = "") =>
  `[container]\nbase = "${BASE}"\nsetup = "exit 7"\n\n[proxy.upstreams]\nanthropic = "${anthropic.url}"\n${extra}`;

/** `lazy run PROMPT --code CODE` (the README's first command), each stderr line with the time it arrived (ms since it began). */
async function runTimed(code: string): Promise<{ lines: { at: number; text: string }[]; stderr: string }> {
  const began = performance.now();
  const proc = Bun.spawn([BIN, "run", "Fix the login form", "--code", code], {
    cwd: p.root,
    env: p.fullEnv(),
    stdout: "pipe",
    stderr: "pipe",
    stdin: "ignore",
  });
  const lines: { at: number; text: string }[] = [];
  let tail = "";
  const decoder = new TextDecoder();
  for await (const chunk of proc.stderr) {
    const parts = (tail + decoder.decode(chunk)).split("\n");
    tail = parts.pop() ?? "";
    for (const text of parts) lines.push({ at: performance.now() - began, text });
  }
  await proc.exited;
  return { lines, stderr: lines.map((l) => l.text).join("\n") };
}

/** The tag the task's launch built, from its `build` events. */
async function builtTag(code: string): Promise<string> {
  const events = (await p.json(["task", "show", code])).events as { kind: string; data: { done?: string } }[];
  const tag = events.find((e) => e.kind === "build" && e.data.done)?.data.done;
  expect(tag, JSON.stringify(events.slice(-5))).toBeString();
  if (!built.includes(tag!)) built.push(tag!);
  return tag!;
}

beforeAll(async () => {
  anthropic = await dockerAnthropic();
  const b = sh("/", `printf 'FROM ${TEST_IMAGES.node}\\nRUN echo ${BASE} > /first-build-base\\n' | docker build -q -t ${BASE} -`);
  expect(b.code, b.err).toBe(0);
  p = new Project({ toml: "" });
  p.writeToml(toml());
  sh(p.root, "git -c user.name=Dev -c user.email=dev@example.com commit -q --allow-empty -m init");
  await p.setCredential("anthropic", KEY);
});

afterAll(async () => {
  await teardown(p, anthropic);
  for (const tag of built.reverse()) sh("/", `docker rmi ${tag}`);
});

describe("the first build of lazy's default image", () => {
  test("a Claude-only project builds a Claude-only image, says up front it is a one-off build, and shows its output live", async () => {
    const { lines, stderr } = await runTimed("first");
    // Before the build: one line with what it is, its size and its time.
    const announce = lines.findIndex((l) => l.text.includes("a one-off build, about"));
    expect(announce, stderr).toBeGreaterThanOrEqual(0);
    expect(lines[announce]!.text).toMatch(/harnesses: claude\)/);
    expect(lines[announce]!.text).toMatch(
      /about \d+(\.\d)? (GB|MB) and \d+ (s|min) on 2 cores with a fast network; later launches reuse it/,
    );
    const firstStep = lines.findIndex((l) => /^ {2}Step \d+\/\d+ : /.test(l.text));
    expect(firstStep).toBeGreaterThan(announce);
    // While it builds: the build's own lines under the step's timer, never 5 s without a line.
    const built = lines.findIndex((l) => l.text.startsWith("Built lazy/agent:"));
    expect(built, stderr).toBeGreaterThan(firstStep);
    const during = lines.slice(firstStep, built + 1);
    const output = during.filter((l) => /^ {4}\[\d+s\] /.test(l.text));
    expect(output.length, stderr).toBeGreaterThan(5);
    expect(
      output.some((l) => /npm http fetch|fetched so far|Get:\d+/.test(l.text)),
      stderr,
    ).toBe(true);
    const gaps = during.slice(1).map((l, i) => l.at - during[i]!.at);
    expect(Math.max(...gaps), stderr).toBeLessThanOrEqual(5000);
    // The image: Claude Code only, and its tag names the set.
    const tag = await builtTag("first");
    expect(tag).toMatch(/-claude-[0-9a-f]{12}(-ca[0-9a-f]{8})?$/);
    expect(tag).not.toMatch(/codex|pi-/);
    const inside = sh(
      "/",
      `docker run --rm --entrypoint sh ${tag} -c 'command -v claude; command -v codex || echo no-codex; command -v pi || echo no-pi'`,
    );
    expect(inside.out).toContain("/claude");
    expect(inside.out).toContain("no-codex");
    expect(inside.out).toContain("no-pi");
    // At most half the 2.41 GB the three-harness image was (issue 37), on this test base too.
    const bytes = Number(sh("/", `docker image inspect -f '{{.Size}}' ${tag}`).out.trim());
    expect(bytes).toBeLessThanOrEqual(0.5 * 2.41e9);
    // A second launch reuses it: no build, no announcement.
    await p.ok(["task", "add", "again", "--code", "again"]);
    const again = await p.run(["start", "again"]);
    expect(again.stderr).not.toContain("Building the task image");
  }, 900_000);

  test("a codex profile added to lazy.toml makes the image plan claude and codex: a new image is built", async () => {
    const claudeOnly = await builtTag("first");
    p.writeToml(toml(`openai = "${anthropic.url}"\n\n[profiles.review]\nharness = "codex"\n`));
    await p.ok(["task", "add", "with codex", "--code", "with-codex"]);
    const r = await p.run(["start", "with-codex"]);
    expect(r.stderr).toContain("harnesses: claude, codex)");
    const tag = await builtTag("with-codex");
    expect(tag).toMatch(/-claude-codex-[0-9a-f]{12}(-ca[0-9a-f]{8})?$/);
    expect(tag).not.toBe(claudeOnly);
    expect(sh("/", `docker run --rm --entrypoint sh ${tag} -c 'command -v claude && command -v codex'`).code).toBe(0);
  }, 900_000);
});
