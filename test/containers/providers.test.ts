/**
 * Turns on Ollama and OpenRouter profiles, with real Claude Code in real containers: a local
 * Ollama's turn runs with no credential stored at all and the server receives none; hosted
 * Ollama's and OpenRouter's (their origins overridden to loopback mocks) reach the server with
 * the stored key as Bearer, while the container holds only placeholders.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { TEST_IMAGES } from "../helpers/env";
import { containerProject, launched, providerMocks, settled, teardown } from "../helpers/fixtures";
import { type Project, sh } from "../helpers/lazy";
import type * as Mock from "../helpers/providers";

const OLLAMA_KEY = "ollama-REALCLOUD-" + "c".repeat(40);
const OPENROUTER_KEY = "sk-or-v1-" + "fedcba9876543210".repeat(4);

let local: Mock.MockProvider;
let hosted: Mock.MockProvider;
let openrouter: Mock.MockProvider;
let p: Project;

beforeAll(async () => {
  ({ local, hosted, openrouter } = await providerMocks());
  for (const m of [local, hosted, openrouter]) m.reply = { text: "Answered by the model server." };
});

afterAll(() => teardown(p, local, hosted, openrouter));

const docker = (args: string) => sh("/", `docker ${args}`);

describe("provider profiles in containers", () => {
  test("a local Ollama turn with no credential stored; hosted Ollama and OpenRouter turns with Bearer keys; the container holds placeholders only", async () => {
    const toml =
      `[container]\nbase = "${TEST_IMAGES.node}"\n\n` +
      `[proxy.upstreams]\nollama = "${hosted.url}"\nopenrouter = "${openrouter.url}"\n\n` +
      `[profiles.local]\nharness = "claude"\nmodel = "llama3"\nendpoint = "${local.url}"\n\n` +
      `[profiles.cloud]\nharness = "claude"\nmodel = "gpt-oss:120b"\nendpoint = "https://ollama.com"\n\n` +
      `[profiles.router]\nharness = "claude"\nmodel = "anthropic/claude-sonnet-4.5"\nendpoint = "https://openrouter.ai/api"\n\n` +
      `[models.roles]\nagent = "local"\n`;
    // containerProject stores an anthropic key; this project must run without one.
    p = await containerProject(local, "sk-ant-api03-unused", { toml });
    await p.ok(["auth", "rm", "anthropic"]);
    expect((await p.json<any>(["auth", "list"])).credentials).toEqual([]);

    await launched(p, "on-local", "Say hello", "--profile", "local");
    const t = await settled(p, "on-local");
    expect(t.task.status, JSON.stringify(t.events.slice(-3))).toBe("done");
    expect((await p.ok(["logs", "on-local"])).stdout).toContain("Answered by the model server.");
    const posts = local.received.filter((r) => r.method === "POST");
    expect(posts.length).toBeGreaterThan(0);
    for (const r of posts) {
      expect(r.path).toBe("/v1/messages");
      expect(r.headers.authorization).toBeUndefined();
      expect(r.headers["x-api-key"]).toBeUndefined();
    }

    await p.setCredential("ollama", OLLAMA_KEY);
    await p.setCredential("openrouter", OPENROUTER_KEY);
    for (const [code, profile, mock, key, path] of [
      ["on-cloud", "cloud", hosted, OLLAMA_KEY, "/v1/messages"],
      ["on-router", "router", openrouter, OPENROUTER_KEY, "/api/v1/messages"],
    ] as const) {
      await launched(p, code, "Say hello", "--profile", profile);
      const s = await settled(p, code);
      expect(s.task.status, JSON.stringify(s.events.slice(-3))).toBe("done");
      const sent = mock.received.filter((r) => r.method === "POST");
      expect(sent.length).toBeGreaterThan(0);
      for (const r of sent) {
        expect(r.path).toBe(path);
        expect(r.headers.authorization).toBe(`Bearer ${key}`);
        expect(r.headers["x-api-key"]).toBeUndefined();
        expect(JSON.stringify(r.headers) + r.body).not.toMatch(/sk-or-v1-lazy-|sk-ant-api03-lazy-|lazy-[0-9a-f]{20}/);
      }
      // Nothing the container shows holds a real key (the proxy took a placeholder from it: it
      // refuses any other credential from a container's address).
      const name = `lazy-${p.stateDir.split("/").at(-1)}-${s.task.id}`;
      expect(docker(`start ${name}`).code).toBe(0);
      const everything = docker(`inspect ${name}`).out + docker(`exec ${name} env`).out + docker(`exec ${name} ps auxww`).out;
      for (const secret of [OLLAMA_KEY, OPENROUTER_KEY]) expect(everything).not.toContain(secret);
      const files = sh("/", `grep -rl -- '${key}' ${p.stateDir}/worktrees ${p.stateDir}/tasks ${p.root} 2>/dev/null`).out;
      expect(files).toBe("");
      docker(`stop -t 0 ${name}`);
    }
    // The placeholder shapes the containers were handed.
    const router = await p.grant({ role: "agent", task: "on-router" });
    expect(router.envVar).toBe("ANTHROPIC_AUTH_TOKEN");
    expect(router.placeholder).toMatch(/^sk-or-v1-lazy-/);
    const cloud = await p.grant({ role: "agent", task: "on-cloud" });
    expect(cloud.envVar).toBe("ANTHROPIC_AUTH_TOKEN");
  }, 900_000);
});
