/**
 * Attacks on the host's network setup reaching builds and containers ([container]
 * inherit_network_env): a company proxy's password in the host's HTTPS_PROXY is a secret the
 * agent could send anywhere, so it must reach no task container (its env, `docker inspect`) and
 * no image's history or config; and a pulled lazy.toml turning the inheritance on or off is
 * config like any other: refused until `lazy trust`.
 *
 * Against the code before: no proxy variable reached a build or a container at all, so the
 * first two held trivially there (they guard the new path); the key did not exist, so the third
 * was refused as a broken lazy.toml (strict schema), not as untrusted.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Image } from "../../src/containers";
import { HostNet } from "../../src/network";
import { TEST_IMAGES } from "../helpers/env";
import { containerProject, containerToml, edit, teardown, upstream } from "../helpers/fixtures";
import { type Project, sh } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

const KEY = "sk-ant-api03-NETENVATTACK-" + "x".repeat(65) + "AA";
const PASSWORD = `corp-pw-${crypto.randomUUID()}`;
// Nothing listens there: a build that needs no network never uses it, and a container has no route to it.
const PROXY = `http://alice:${PASSWORD}@127.0.0.1:9`;
let anthropic: Mock.MockProvider;
const projects: Project[] = [];

beforeAll(async () => {
  anthropic = await Mock.anthropic();
});

afterAll(() => teardown(projects, anthropic));

describe("the host's proxy password", () => {
  for (const network of ["allowlist", "open"] as const)
    test(`never reaches a task container's env or inspect, or the image's history (network = "${network}")`, async () => {
      const image = Image.withHostNetwork(Image.plan("/", { base: TEST_IMAGES.node }, ["claude"]), HostNet.read(process.env)).tag;
      const marker = `built-${crypto.randomUUID()}`;
      const p = await containerProject(anthropic, KEY, {
        env: {
          HTTPS_PROXY: PROXY,
          https_proxy: PROXY,
          HTTP_PROXY: PROXY,
          NO_PROXY: "127.0.0.1,localhost",
          no_proxy: "127.0.0.1,localhost",
        },
        files: (root) => writeFileSync(join(root, "Dockerfile"), `FROM ${image}\nRUN echo ${marker}\n`),
      });
      projects.push(p);
      p.writeToml(`[container]\ndockerfile = "Dockerfile"\nnetwork = "${network}"\n\n${upstream(anthropic.url)}`);
      // The hostile agent looks for it in its own environment, every process's, and its home.
      anthropic.reply = {
        text: "Looked.",
        toolUse: {
          name: "Bash",
          input: { command: "env; sudo cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n' | grep -i proxy", description: "look" },
        },
      };
      anthropic.reset();
      const r = await p.run(["run", "look for a proxy", "--code", `pw-${network}`]);
      expect(r.code, r.stderr).toBe(0);
      expect(p.log()).toContain(`build: ${marker}`);
      // The agent's tool output went to the model: no password in it.
      expect(anthropic.received.length).toBeGreaterThan(1);
      for (const q of anthropic.received) expect(q.body).not.toContain(PASSWORD);
      const id = sh("/", `docker ps -aq --filter label=dev.lazy.root=${p.root}`).out.trim();
      expect(id).not.toBe("");
      const inspect = sh("/", `docker inspect ${id}`).out;
      expect(inspect).not.toContain(PASSWORD);
      const tag = JSON.parse(inspect)[0].Config.Image as string;
      const history = sh("/", `docker history --no-trunc ${tag}`).out + sh("/", `docker image inspect ${tag}`).out;
      expect(history).toContain(marker);
      expect(history).not.toContain(PASSWORD);
      // Nor does lazy's own log, where it names the proxy in use.
      expect(p.log()).not.toContain(PASSWORD);
      if (network === "open") expect(p.log()).toContain("carries a password: task containers do not get it");
    }, 300_000);
});

describe("a pulled lazy.toml", () => {
  for (const inherit of [true, false])
    test(`setting inherit_network_env = ${inherit} is refused until lazy trust`, async () => {
      const p = await containerProject(anthropic, KEY);
      projects.push(p);
      await p.ok(["daemon", "stop"]);
      anthropic.reset();
      edit(p, containerToml(anthropic.url, { container: `inherit_network_env = ${inherit}` }));
      const r = await p.run(["run", "anything", "--code", `pulled-${inherit}`]);
      expect(r.code, r.stderr).toBe(4);
      expect(r.stderr).toMatch(/container\.inherit_network_env — added since you trusted it/);
      expect(r.stderr).toContain(`run lazy trust in ${p.root}`);
      expect(p.runtime()).toBeUndefined();
      expect(sh("/", `docker ps -aq --filter label=dev.lazy.root=${p.root}`).out.trim()).toBe("");
      expect(anthropic.received.filter((q) => q.method === "POST")).toEqual([]);
    }, 120_000);
});
