/**
 * Issue 35, finding 1: agent-written files ran as root on the host's network at the next build.
 * The person's trusted Dockerfile COPYs docker/prep.sh and RUNs it. The agent (real Claude Code in
 * a real container, told by the mock provider) rewrites prep.sh to probe a loopback-only
 * listener of this host and another address of it, and commits. Each step asserts what a person
 * would see: accept refuses without --with-config naming the file; once merged, `lazy trust
 * --show` says it changed and the next launch refuses the build (nothing built) until `lazy
 * trust`; once approved, the build runs on the project's fenced network: its RUN reaches neither
 * listener (each saw no connection; the build's output says it could not connect), and lazy's
 * egress proxy refuses to carry it there. A change that arrives by a pull (written and committed
 * in the checkout, no accept) is refused the same way; an unchanged context builds with no prompt.
 *
 * Against the code before (main at 4f83c63): accept merged prep.sh without --with-config, the
 * launch rebuilt at once on the host's network and the RUN connected to the loopback listener.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { networkInterfaces, tmpdir } from "node:os";
import { join } from "node:path";
import { Image } from "../../src/containers";
import { HostNet } from "../../src/network";
import { TEST_IMAGES } from "../helpers/env";
import { acceptRefused, bash, containerProject, containerToml, launched, removeContainers, settled } from "../helpers/fixtures";
import { cleanupAll, type Project, sh } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

const KEY = "sk-ant-api03-BUILDTRUST-" + "q".repeat(70) + "AA";
let anthropic: Mock.MockProvider;
let scratch: string;
let agentImage: string;
let p: Project;
const projects: Project[] = [];

/** This host's first IPv4 address that is neither loopback nor a Docker bridge's (lazy's range or docker0). */
const hostAddress = (): string => {
  for (const [name, list] of Object.entries(networkInterfaces()))
    for (const i of list ?? [])
      if (i.family === "IPv4" && !i.internal && !name.startsWith("docker") && !name.startsWith("br-") && !i.address.startsWith("10.213."))
        return i.address;
  throw new Error("this host has no IPv4 address besides loopback and Docker's bridges");
};

/** A TCP listener that keeps who connected. */
function listener(hostname: string) {
  const seen: string[] = [];
  const l = Bun.listen({
    hostname,
    port: 0,
    socket: {
      open: (s) => {
        seen.push(s.remoteAddress);
        s.end("hello from the host\n");
      },
      data: () => {},
    },
  });
  return { port: l.port, seen, stop: () => l.stop(true) };
}

let loop: ReturnType<typeof listener>;
let other: ReturnType<typeof listener>;
let addr: string;

/** The agent's prep.sh: from the build, connect to the host's loopback listener and its other address, then ask the build's proxy for the loopback one. */
const probe = (marker: string) => `#!/bin/sh
echo ${marker}
node - <<'EOF'
const net = require("net");
const tries = [["127.0.0.1", ${loop.port}], ["${addr}", ${other.port}]];
let left = tries.length;
for (const [h, p] of tries) {
  const s = net.connect(p, h);
  let said = false;
  const end = (what) => { if (said) return; said = true; console.log(what); s.destroy(); if (--left === 0) viaProxy(); };
  s.setTimeout(4000);
  s.on("connect", () => end("CONNECTED to " + h + ":" + p));
  s.on("error", (e) => end("could not connect to " + h + ":" + p + ": " + e.code));
  s.on("timeout", () => end("could not connect to " + h + ":" + p + ": timed out"));
}
function viaProxy() {
  const u = process.env.HTTPS_PROXY || process.env.https_proxy;
  if (!u) return console.log("no proxy in the build");
  const x = new URL(u);
  const r = require("http").request({ host: x.hostname, port: x.port, method: "CONNECT", path: "127.0.0.1:${loop.port}" });
  r.on("connect", (res, sock) => { console.log("the proxy answered " + res.statusCode + " for 127.0.0.1:${loop.port}"); sock.destroy(); });
  r.on("error", (e) => console.log("the proxy failed: " + e.code));
  r.setTimeout(5000, () => { console.log("the proxy timed out"); r.destroy(); });
  r.end();
}
EOF
`;

/** The agent's act: write docker/prep.sh (base64, no quoting to get wrong) and commit it. */
const rewritesPrep = (text: string) =>
  bash(
    "Made the build's prep faster.",
    `printf %s ${Buffer.from(text).toString("base64")} | base64 -d > docker/prep.sh && git add docker/prep.sh && git commit -qm 'faster prep'`,
    "rewrite the prep script",
  );

/** `lazy start CODE` of a new task is refused; its stderr. */
async function startRefused(code: string): Promise<string> {
  await p.ok(["task", "add", "more work", "--code", code]);
  const r = await p.run(["start", code]);
  expect(r.code, r.stderr).not.toBe(0);
  return r.stderr;
}

beforeAll(async () => {
  anthropic = await Mock.anthropic();
  scratch = mkdtempSync(join(tmpdir(), "lazy-build-trust-"));
  addr = hostAddress();
  loop = listener("127.0.0.1");
  other = listener(addr);
  // lazy's default image on the test base (other container tests build it too): a project
  // Dockerfile FROM it has Claude Code for the agent's turn.
  agentImage = Image.withHostNetwork(Image.plan(scratch, { base: TEST_IMAGES.node }, ["claude"]), HostNet.read(process.env)).tag;
  if (sh("/", `docker image inspect ${agentImage}`).code !== 0) {
    const q = await containerProject(anthropic, KEY);
    projects.push(q);
    const r = await q.run(["run", "build the image"]);
    if (r.code !== 0) throw new Error(`building ${agentImage}: ${r.stderr}`);
  }
}, 900_000);

afterAll(async () => {
  for (const q of [...projects, p]) if (q) removeContainers(q);
  loop?.stop();
  other?.stop();
  await cleanupAll(anthropic);
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

describe("a script the trusted Dockerfile runs at build, rewritten by the agent", () => {
  test("accept needs --with-config; the next launch refuses the build until lazy trust; then the build reaches neither host listener", async () => {
    p = await containerProject(anthropic, KEY, {
      files: (root) => {
        mkdirSync(join(root, "docker"));
        writeFileSync(join(root, "docker/Dockerfile"), `FROM ${agentImage}\nCOPY prep.sh /prep.sh\nRUN sh /prep.sh\n`);
        writeFileSync(join(root, "docker/prep.sh"), "#!/bin/sh\necho prepared-as-approved\n");
      },
    });
    projects.push(p);
    // The person looked at the Dockerfile and its prep script, named it, and approved them (writeToml runs lazy trust).
    p.writeToml(containerToml(anthropic.url, { container: 'dockerfile = "docker/Dockerfile"' }));

    // An unchanged context builds with no prompt; the agent's turn rewrites prep.sh and commits.
    anthropic.answer(rewritesPrep(probe("agent-prep")));
    await launched(p, "prep", "Make the image build faster");
    const first = await settled(p, "prep");
    expect(first.task.status).toBe("done");
    expect(first.events.some((e: any) => e.kind === "build" && typeof e.data.done === "string")).toBe(true);
    expect(sh(p.root, "git show lazy/prep:docker/prep.sh").out).toContain("agent-prep");

    // lazy accept without --with-config: refused, naming the file; main unmoved.
    const main = sh(p.root, "git rev-parse main").out.trim();
    await acceptRefused(p, "prep", "docker/prep.sh — in the build context of docker/Dockerfile");
    expect(sh(p.root, "git rev-parse main").out.trim()).toBe(main);

    // With --with-config the person merges it; the checkout now holds the agent's script.
    anthropic.answer({ text: "Rewrites the prep script." });
    await p.ok(["accept", "prep", "--with-config"]);
    expect(readFileSync(join(p.root, "docker/prep.sh"), "utf8")).toContain("agent-prep");

    // lazy trust --show no longer says it is trusted as it is: it names the file.
    const show = await p.ok(["trust", "--show"]);
    expect(show.stdout).toContain("changed since");
    expect(show.stdout).toContain("docker/prep.sh (changed)");

    // The next launch refuses before building anything, naming the file and lazy trust.
    const refused = await startRefused("after");
    expect(refused).toContain("docker/prep.sh (changed)");
    expect(refused).toContain(`run lazy trust in ${p.root}`);
    expect(refused).not.toContain("Building the task image");
    expect(p.log()).not.toContain("build: agent-prep");
    expect(loop.seen).toEqual([]);
    expect(other.seen).toEqual([]);

    // The person approves it; lazy trust says what changed as it does.
    const trusted = p.trust();
    expect(trusted.code, trusted.stderr).toBe(0);
    expect(trusted.stdout).toContain("docker/prep.sh (changed, in the build context of docker/Dockerfile)");

    // Now it builds, on the project's fenced network: the RUN reaches neither listener.
    anthropic.answer({ text: "Nothing to do." });
    await launched(p, "probe", "Look around");
    await settled(p, "probe");
    const log = p.log();
    expect(log).toContain("build: agent-prep");
    expect(log).toMatch(/on the project's network lazy-\S+ \(fenced: allowlist, through lazy's egress proxy\)/);
    expect(log).toContain(`build: could not connect to 127.0.0.1:${loop.port}`);
    expect(log).toContain(`build: could not connect to ${addr}:${other.port}`);
    expect(log).toContain(`build: the proxy answered 403 for 127.0.0.1:${loop.port}`);
    expect(log).not.toContain("CONNECTED to");
    expect(loop.seen).toEqual([]);
    expect(other.seen).toEqual([]);
  }, 1_800_000);

  test("the same change arriving by a pull (written and committed in the checkout, no accept) is refused the same way", async () => {
    writeFileSync(join(p.root, "docker/prep.sh"), probe("pulled-prep"));
    expect(sh(p.root, "git add docker/prep.sh && git commit -qm 'pulled'").code).toBe(0);
    const refused = await startRefused("pulled");
    expect(refused).toContain("docker/prep.sh (changed)");
    expect(refused).toContain("lazy trust");
    expect(p.log()).not.toContain("build: pulled-prep");
    expect((await p.ok(["trust", "--show"])).stdout).toContain("docker/prep.sh (changed)");
    expect(loop.seen).toEqual([]);
    expect(other.seen).toEqual([]);
  }, 600_000);
});
