/**
 * The CLI's conventions of gh and kubectl (issue 30, Deliver 7): "did you mean" for typos,
 * `lazy help [cmd]` and `lazy version`, internal commands hidden from lists and completion,
 * help wrapped to the terminal's width with EXAMPLES, `lazy auth set` warning on an unknown
 * provider name or a key of another provider's shape (never saying the key), and `task budget`
 * saying what it did.
 */
import { afterAll, expect, test } from "bun:test";
import { cleanupAll, Project } from "../helpers/lazy";

afterAll(cleanupAll);

const p = new Project();

test("lazy strat suggests start; lazy task lsit suggests list; nothing else runs", async () => {
  const r = await p.run(["strat"]);
  expect(r.code).toBe(2);
  expect(r.stderr).toContain('Unknown command "strat" for lazy. Did you mean lazy start');
  const t = await p.run(["task", "lsit"]);
  expect(t.code).toBe(2);
  expect(t.stderr).toContain('Unknown command "lsit" for lazy task. Did you mean lazy task list?');
  // Nothing close: the list of what there is, without the internal commands.
  const far = await p.run(["zzzzzz"]);
  expect(far.code).toBe(2);
  expect(far.stderr).toContain("try one of: init, trust");
  expect(far.stderr).not.toContain("supervise");
  // A typo with --help is refused the same way, not answered with lazy's own help.
  const h = await p.run(["strat", "--help"]);
  expect(h.code).toBe(2);
  expect(h.stderr).toContain("Did you mean lazy start");
});

test("lazy help [cmd] and lazy version exit 0; help has EXAMPLES for the main commands", async () => {
  const v = await p.run(["version"]);
  expect(v.code).toBe(0);
  expect(v.stdout).toMatch(/^lazy \d+\.\d+\.\d+ \(commit /);
  const j = JSON.parse((await p.ok(["version", "--json"])).stdout);
  expect(`lazy ${j.version} (commit ${j.commit}, built ${j.date})`).toBe(v.stdout.trim());
  const h = await p.run(["help", "start"]);
  expect(h.code).toBe(0);
  expect(h.stdout).toContain("USAGE lazy start");
  expect(h.stdout).toContain("EXAMPLES\n\n  lazy start fix-login");
  // The same as lazy start --help.
  expect((await p.ok(["start", "--help"])).stdout).toBe(h.stdout);
  for (const cmd of [["run"], ["send"], ["task", "add"], ["accept"], ["diff"], ["watch"], ["trust"]]) {
    const r = await p.ok(["help", ...cmd]);
    expect(r.stdout).toContain(`USAGE lazy ${cmd.join(" ")}`);
    expect(r.stdout).toContain(`EXAMPLES\n\n  `);
    expect(r.stdout).toContain(`lazy ${cmd.join(" ")} `);
  }
  const top = await p.ok(["help"]);
  expect(top.stdout).toContain("USAGE lazy <command>");
  expect(top.stdout).toMatch(/\n\s+help\s+Help on lazy/);
  expect(top.stdout).toMatch(/\n\s+version\s+Print lazy's version/);
  const bad = await p.run(["help", "strat"]);
  expect(bad.code).toBe(2);
  expect(bad.stderr).toContain("Did you mean lazy start");
});

test("internal commands (supervise, daemon run) are in no help list and no completion", async () => {
  const top = (await p.ok(["--help"])).stdout;
  expect(top).not.toMatch(/\bsupervise\b/);
  const daemon = (await p.ok(["daemon", "--help"])).stdout;
  expect(daemon).toContain("restart");
  expect(daemon).not.toMatch(/\brun\b/);
  for (const shell of ["bash", "zsh", "fish"]) {
    const c = (await p.ok(["completion", shell])).stdout;
    expect(c).toContain("diff");
    expect(c).not.toContain("supervise");
  }
});

test("help is wrapped to the terminal's width, continuing under the description", async () => {
  const r = await p.ok(["help", "run"], { env: { COLUMNS: "60" } });
  const lines = r.stdout.split("\n");
  const examples = lines.indexOf("EXAMPLES");
  expect(examples).toBeGreaterThan(0);
  for (const l of lines.slice(0, examples)) expect(l.length).toBeLessThanOrEqual(60);
  // An option's description goes on under itself, not under the flag.
  const i = lines.findIndex((l) => /^\s+--wait/.test(l));
  const col = lines[i]!.indexOf("When");
  expect(col).toBeGreaterThan(20);
  expect(lines[i + 1]).toMatch(new RegExp(`^ {${col}}\\S`));
  // No trailing padding on any line (citty pads rows to the widest).
  for (const l of lines) expect(l).toBe(l.trimEnd());
});

test("lazy auth set warns on an unknown provider name and on a key of another provider's shape, never saying the key", async () => {
  const anthropicKey = "sk-ant-api03-HELPTEST-" + "k".repeat(60) + "AA";
  const wrong = await p.run(["auth", "set", "openai"], { stdin: anthropicKey });
  expect(wrong.code).toBe(0);
  expect(wrong.stderr).toContain(
    "The value does not look like a key for openai (an OpenAI key starts sk- or sk-proj- (not sk-ant-, not sk-or-)); stored anyway.",
  );
  const typo = await p.run(["auth", "set", "antropic"], { stdin: anthropicKey });
  expect(typo.code).toBe(0);
  expect(typo.stderr).toContain('"antropic" is not a provider name lazy knows');
  expect(typo.stderr).toContain("Did you mean lazy auth set anthropic?");
  const fine = await p.run(["auth", "set", "anthropic"], { stdin: anthropicKey });
  expect(fine.stderr).not.toContain("does not look like");
  expect(fine.stderr).not.toContain("not a provider name");
  for (const r of [wrong, typo, fine]) {
    expect(r.stdout + r.stderr).not.toContain("HELPTEST");
  }
});

test("task budget says what it did: with no budget set, that the addition waits for one", async () => {
  await p.ok(["task", "add", "x", "--code", "bud"]);
  const r = await p.run(["task", "budget", "bud", "+1000"]);
  expect(r.code).toBe(0);
  const said = r.stdout + r.stderr;
  expect(said).toContain(
    "Task bud has no token budget ([budget] per_task_tokens is not set in lazy.toml): 1000 tokens was added, and counts only once one is set.",
  );
  expect(said).not.toContain("budget is now");
  const usd = await p.run(["task", "budget", "bud", "+5", "--usd"]);
  expect(usd.stdout + usd.stderr).toContain(
    "Task bud has no dollar budget ([budget] per_task_usd is not set in lazy.toml): $5.00 was added",
  );
});
