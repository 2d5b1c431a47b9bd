/**
 * A doctor that tells the truth (issue 30, Deliver 6): no credential for the default profile is
 * a finding with its remedy (lazy auth set NAME, or a restart when only this shell has the key);
 * a daemon whose Docker endpoint (DOCKER_HOST or context) differs from this shell's is a blocking
 * finding with lazy daemon restart (the preflight's, issue 37); the lazy init starter shows the real defaults (base) and says which
 * keys have none (image, dockerfile).
 */
import { afterAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadText } from "../../src/config";
import { cleanupAll, Project } from "../helpers/lazy";

afterAll(cleanupAll);

const KEY = "sk-ant-api03-DOCTOR-" + "d".repeat(70) + "AA";
/** A Docker config folder with no context: the shell's engine is the default socket. */
const plainDocker = mkdtempSync(join(tmpdir(), "lazy-dockercfg-"));
/** No key in any variable the daemon could fall back to, and no Docker context from the person's home. */
const clean = {
  ANTHROPIC_API_KEY: undefined,
  OPENAI_API_KEY: undefined,
  DOCKER_HOST: undefined,
  DOCKER_CONTEXT: undefined,
  DOCKER_CONFIG: plainDocker,
} as unknown as Record<string, string>;

type Finding = { check: string; ok: boolean; blocking: boolean; summary: string; remedy?: string };
const findings = async (p: Project, env: Record<string, string | undefined> = {}) =>
  (JSON.parse((await p.run(["doctor", "--json"], { env })).stdout) as { findings: Finding[] }).findings;

describe("the default profile's credential", () => {
  test("none stored: a blocking finding naming the profile and lazy auth set; stored: ok", async () => {
    const p = new Project({ env: clean });
    // Doctor reads the daemon's credentials; it never starts one itself (issue 37).
    await p.ok(["daemon", "start"]);
    const r = await p.run(["doctor"]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(
      /FAIL {2}auth +no "anthropic" credential is stored, and the default profile \(claude\) needs it: every task that names no profile would be refused\n +→ lazy auth set anthropic/,
    );
    expect(r.stderr).toContain("blocking problem");
    await p.setCredential("anthropic", KEY);
    const after = await p.run(["doctor"]);
    expect(after.stdout).toMatch(/ok {4}auth +the default profile \(claude\) bills "anthropic": stored \(api-key, …/);
    expect(after.stdout).not.toContain('no "anthropic" credential');
    expect(after.stdout + after.stderr).not.toContain("DOCTOR-ddd");
  });

  test("the profile lazy.toml makes the default decides which credential is named", async () => {
    const p = new Project({ env: clean, toml: '[models.roles]\nagent = "codex"\n' });
    await p.ok(["daemon", "start"]);
    const f = (await findings(p)).find((x) => x.summary.includes("default profile"));
    expect(f).toMatchObject({ ok: false, blocking: true, remedy: expect.stringMatching(/^lazy auth set openai /) });
    expect(f!.summary).toContain('no "openai" credential is stored, and the default profile (codex) needs it');
  });

  test("a profile for a local model server (credential none) needs no finding", async () => {
    const p = new Project({
      env: clean,
      toml: '[models.roles]\nagent = "local"\n\n[profiles.local]\nharness = "claude"\nendpoint = "http://127.0.0.1:11434"\ncredential = "none"\n',
    });
    expect((await findings(p)).filter((x) => x.summary.includes("default profile"))).toEqual([]);
  });

  test("this shell exports the key, the daemon was started without it: the remedy is a restart from here", async () => {
    const p = new Project({ env: clean });
    await p.ok(["daemon", "start"]);
    const f = (await findings(p, { ANTHROPIC_API_KEY: KEY })).find((x) => x.summary.includes("default profile"));
    expect(f!.summary).toContain("this shell exports ANTHROPIC_API_KEY, but the daemon was started without it");
    expect(f!.remedy).toBe("lazy daemon restart from this shell, or store it: lazy auth set anthropic");
    // Restarted from that shell, the daemon has it (from its environment).
    await p.ok(["daemon", "restart"], { env: { ANTHROPIC_API_KEY: KEY } });
    const now = (await findings(p)).find((x) => x.summary.includes("default profile"));
    expect(now).toMatchObject({ ok: true, summary: `the default profile (claude) bills "anthropic": from the daemon's ANTHROPIC_API_KEY` });
  });
});

describe("the daemon's Docker engine against this shell's", () => {
  test("a daemon started with another DOCKER_HOST is a finding naming both, and lazy daemon restart; after it, the same engine", async () => {
    const p = new Project({ env: clean });
    const elsewhere = `unix://${join(p.home, "elsewhere.sock")}`;
    await p.ok(["daemon", "start"], { env: { DOCKER_HOST: elsewhere } });
    const r = await p.run(["doctor"]);
    // Blocking since issue 37: the launch's preflight refuses it the same way.
    expect(r.stdout).toContain(
      `FAIL  docker   this shell names the Docker engine unix:///var/run/docker.sock (default socket), but the running daemon uses ${elsewhere} (DOCKER_HOST): tasks would run on the daemon's engine`,
    );
    expect(r.stdout).toContain("→ run lazy daemon restart from this shell (the daemon takes this shell's DOCKER_HOST or Docker context)");
    await p.ok(["daemon", "restart"]);
    const same = (await findings(p)).filter((f) => f.check === "docker" && /engine/.test(f.summary) && /daemon/.test(f.summary));
    expect(same).toEqual([
      {
        check: "docker",
        ok: true,
        blocking: false,
        summary: "the daemon uses the same engine as this shell (unix:///var/run/docker.sock)",
      },
    ]);
  });

  test("a shell on another Docker context than the daemon's: the finding names the context", async () => {
    const p = new Project({ env: clean });
    await p.ok(["daemon", "start"]);
    // docker context use other: config.json names it, its meta.json (under the name's sha256) its host.
    const cfg = mkdtempSync(join(tmpdir(), "lazy-dockerctx-"));
    writeFileSync(join(cfg, "config.json"), JSON.stringify({ currentContext: "other" }));
    const meta = join(cfg, "contexts", "meta", createHash("sha256").update("other").digest("hex"));
    mkdirSync(meta, { recursive: true });
    writeFileSync(join(meta, "meta.json"), JSON.stringify({ Name: "other", Endpoints: { docker: { Host: "tcp://127.0.0.1:9" } } }));
    const f = (await findings(p, { DOCKER_CONFIG: cfg })).find((x) => x.summary.startsWith("this shell names the Docker engine"));
    expect(f).toMatchObject({ ok: false, blocking: true });
    expect(f!.summary).toContain("this shell names the Docker engine tcp://127.0.0.1:9 (context other)");
    expect(f!.remedy).toStartWith("run lazy daemon restart from this shell");
  });
});

/** The starter's prose with its wrapped `##` lines joined: each description on one line. */
const unwrap = (text: string) => {
  let out = text;
  while (/^(## [^\n]*)\n## /m.test(out)) out = out.replace(/^(## [^\n]*)\n## /m, "$1 ");
  return out;
};

describe("lazy init's starter", () => {
  test("shows the default base image, says image and dockerfile are alternatives with no default, and loads", async () => {
    const p = new Project({ env: clean });
    await p.ok(["init"]);
    const text = readFileSync(join(p.root, "lazy.toml"), "utf8");
    const container = text.slice(text.indexOf("## How task containers are made."), text.indexOf("# [container.limits]"));
    // Prose is `##` lines, wrapped; a setting is one `# key = value` line under its description.
    const prose = unwrap(container);
    expect(prose).toContain("By default lazy builds its own task image FROM base (debian:bookworm)");
    expect(prose).toContain("image or dockerfile (one of them) replaces it");
    expect(prose).toMatch(/^## Base image lazy's default task image is built FROM [^\n]*\n# base = "debian:bookworm"$/m);
    expect(prose).toMatch(
      /^## \(unset by default; an example\) Image to run task containers from, instead of lazy's default [^\n]*\n# image = "node:22-bookworm"$/m,
    );
    expect(prose).toMatch(/^## \(unset by default; an example\) Project Dockerfile [^\n]*\n# dockerfile = "Dockerfile"$/m);
    // The header says what an unmarked value is.
    expect(unwrap(text)).toContain("the commented values are the defaults, or an example (marked so) where a key has none");
    // Uncommenting the default changes nothing that loads.
    const uncommented = text.replace(/^# \[container\]$/m, "[container]").replace(/^# (base = "debian:bookworm")/m, "$1");
    const loaded = loadText(uncommented);
    expect(loaded.ok && loaded.config.container.base).toBe("debian:bookworm");
  });
});
