/**
 * `lazy run --json` is one JSON document on stdout whatever happens: every refusal (an untrusted
 * lazy.toml with or without a daemon, a bad flag, an empty prompt, a missing credential) is
 * `{"status":"refused","error":{"code",…}}` with lazy run's exit code for it, the words on
 * stderr; and the task's code is said on stderr as soon as it is added. No container starts.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { edit, upstream } from "../helpers/fixtures";
import { cleanupAll, Project, sh } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

let mock: Mock.MockProvider;
beforeAll(async () => {
  mock = await Mock.anthropic();
});
afterAll(() => cleanupAll(mock));

/** stdout as exactly one JSON document (JSON.parse fails on anything before or after it). */
const onlyJson = (stdout: string) => JSON.parse(stdout);

describe("lazy run --json: a refusal is one JSON document with a code", () => {
  test("an untrusted lazy.toml, with no daemon and with one running: exit 4, status refused, config_untrusted", async () => {
    const p = new Project();
    edit(p, upstream("http://127.0.0.1:9"));
    const cold = await p.run(["run", "anything", "--json"]);
    expect(cold.code).toBe(4);
    expect(onlyJson(cold.stdout)).toMatchObject({
      status: "refused",
      error: { code: "config_untrusted", facts: { reason: "config_not_trusted", file: join(p.root, "lazy.toml"), changed: false } },
    });
    expect(onlyJson(cold.stdout).error.message).toContain("lazy trust");
    expect(cold.stderr).toContain("not trusted");

    p.trust();
    await p.ok(["task", "list"]); // the daemon runs now
    edit(p, upstream("http://127.0.0.1:10"));
    const warm = await p.run(["run", "anything", "--json"]);
    expect(warm.code).toBe(4);
    expect(onlyJson(warm.stdout)).toMatchObject({
      status: "refused",
      error: { code: "config_untrusted", facts: { reason: "config_not_trusted", changed: true } },
    });
  });

  test("a bad flag, an empty prompt, a bad code: exit 2, status refused, invalid_input, the cause in the message", async () => {
    const p = new Project({ toml: upstream(mock.url) });
    for (const [argv, says] of [
      [["run", "--jsno", "x", "--json"], "Unknown option --jsno for lazy run. Did you mean --json?"],
      [["run", "  ", "--json"], "The prompt is empty"],
      [["run", "x", "--code", "c1", "--json"], 'Task code "c1" looks like a hex task id'],
    ] as const) {
      const r = await p.run([...argv]);
      expect(r.code, r.stderr).toBe(2);
      const doc = onlyJson(r.stdout);
      expect(doc).toMatchObject({ status: "refused", error: { code: "invalid_input" } });
      expect(doc.error.message).toContain(says);
      expect(r.stderr).toContain(says);
    }
  });

  test("a missing credential: exit 5, the task (failed) and the error in the document; its code said on stderr when added", async () => {
    const p = new Project({ toml: upstream(mock.url) });
    sh(p.root, "git -c user.name=Dev -c user.email=dev@example.com commit -q --allow-empty -m init");
    const r = await p.run(["run", "say hi", "--code", "nokey", "--json"]);
    expect(r.code).toBe(5);
    const doc = onlyJson(r.stdout);
    expect(doc).toMatchObject({
      status: "refused",
      task: { code: "nokey", status: "failed" },
      error: { code: "credential_missing", facts: { reason: "credential_not_stored", profile: "claude", credential: "anthropic" } },
    });
    expect(r.stderr).toMatch(new RegExp(`Task nokey \\(id ${doc.task.id}\\) added`));
    // Without --json: nothing on stdout, the same words on stderr.
    const human = await p.run(["run", "say hi again", "--code", "nokey-2"]);
    expect(human.code).toBe(5);
    expect(human.stdout).toBe("");
    expect(human.stderr).toContain("Task nokey-2 (id ");
    // The words a person reads name the cause and the remedy.
    expect(human.stderr).toContain('needs the "anthropic" credential, which is not stored: run lazy auth set anthropic');
  });

  test("an engine that does not answer (the shell's DOCKER_HOST): exit 4, preflight_refused, the address and the remedy", async () => {
    const p = new Project({ toml: upstream(mock.url) });
    sh(p.root, "git -c user.name=Dev -c user.email=dev@example.com commit -q --allow-empty -m init");
    await p.setCredential("anthropic", `sk-ant-api03-RUNJSON-${"j".repeat(71)}AA`);
    await p.ok(["daemon", "stop"]);
    const r = await p.run(["run", "anything", "--code", "noengine", "--json"], { env: { DOCKER_HOST: "tcp://127.0.0.1:1" } });
    expect(r.code, r.stderr).toBe(4);
    const doc = onlyJson(r.stdout);
    expect(doc).toMatchObject({ status: "refused", error: { code: "preflight_refused", facts: { reason: "preflight", check: "docker" } } });
    // The engine's connection refused in its own words: the address and the remedy.
    expect(doc.error.facts.found.kind).toBe("refused");
    expect(doc.error.facts.found.said).toContain("tcp://127.0.0.1:1");
    expect(doc.error.message).toContain("unset DOCKER_HOST");
  });

  test("lazy run --help states every exit code, the question's and Ctrl-C's included, and the JSON refusal", async () => {
    const p = new Project();
    const help = (await p.ok(["run", "--help"])).stdout.replace(/\s+/g, " ");
    for (const s of [
      "8 the agent asked a question",
      "130 interrupted",
      "70 an internal error",
      'status "refused"',
      "4 the launch was refused",
    ])
      expect(help).toContain(s);
  });
});
