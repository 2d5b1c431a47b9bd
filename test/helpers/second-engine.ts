/**
 * This machine's second Docker engine, standing in for a remote one (scripts/second-engine.sh:
 * loopback tcp, its own mount namespace, bridge 10.213.0.1/24, networks from 10.214.0.0/16),
 * and the task image on it. No registry is reachable and its containers have no NAT, so the
 * image is built on the first engine (as lazy would build it) and loaded into the second.
 */
import { afterAll, beforeAll } from "bun:test";
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { Image, Runtime } from "../../src/containers";
import { TEST_IMAGES } from "./env";
import { type ContainerProjectOptions, containerProject } from "./fixtures";
import { cleanupAll, type Project, sh } from "./lazy";
import * as Mock from "./providers";

const SCRIPT = join(import.meta.dir, "../../scripts/second-engine.sh");

/** Start the second engine if it is not up (idempotent, fast when it is): its DOCKER_HOST, and the host address its containers reach. */
export function secondEngine(): { host: string; bind: string } {
  const r = sh("/", `bash ${SCRIPT}`);
  if (r.code !== 0) throw new Error(`scripts/second-engine.sh failed: ${r.err.slice(-2000)}`);
  return { host: r.out.trim().split("\n").at(-1)!, bind: "10.213.0.1" };
}

/**
 * A project whose tasks run on the engine at `host`, remote_bind set (unless `bind: false`),
 * lazy's default image without the host's CA steps (the one remoteImage loads there), pushed
 * onto `projects` for cleanupRemote.
 */
export async function remoteProject(
  mock: Mock.MockProvider,
  key: string,
  projects: Project[],
  opts: { host: string; bind?: string | false; env?: Record<string, string> } & Pick<ContainerProjectOptions, "ignore" | "files">,
): Promise<Project> {
  const p = await containerProject(mock, key, {
    ignore: opts.ignore,
    files: opts.files,
    env: { DOCKER_HOST: opts.host, ...opts.env },
    container: "inherit_network_env = false",
    extra: opts.bind === false ? "" : `\n[proxy]\nremote_bind = "${opts.bind ?? "10.213.0.1"}"\n`,
  });
  projects.push(p);
  return p;
}

/** Where scripts/second-engine-ssh.sh keeps the sshd's host key and the client key it authorizes. */
export const SSH_DIR = "/var/lib/lazy-engine2-ssh";

/** The second engine reachable over SSH too (scripts/second-engine-ssh.sh): its ssh:// address and port; PORT+1 refuses socket forwarding. */
export function secondEngineSsh(): { host: string; tcp: string; port: number } {
  const tcp = secondEngine().host;
  const r = sh("/", `bash ${SCRIPT} ssh`);
  if (r.code !== 0) throw new Error(`scripts/second-engine.sh ssh failed: ${r.err.slice(-2000)}`);
  const host = r.out.trim().split("\n").at(-1)!;
  return { host, tcp, port: Number(host.split(":").at(-1)) };
}

/**
 * An SSH client setup of lazy's own for a test, without touching the real ~/.ssh (OpenSSH reads
 * the passwd entry's home, not $HOME): a folder with the client key, a known_hosts and a
 * config, and an `ssh` first on PATH that runs the system's with `-F` that config (the daemon
 * inherits the CLI's PATH). `known`: the engine's real host key for these ports, another key
 * (a changed one), or none (unknown). `identity: "other"` offers a key the server does not know.
 */
export function sshClient(opts: { ports: number[]; known: "real" | "changed" | "none"; identity?: "real" | "other" }): {
  dir: string;
  env: { PATH: string };
} {
  const dir = mkdtempSync(join(tmpdir(), "lazy-sshc-"));
  const bin = join(dir, "bin");
  mkdirSync(bin);
  const id = join(dir, "id");
  if (opts.identity === "other") sh(dir, `ssh-keygen -q -t ed25519 -N "" -f ${id}`);
  else copyFileSync(join(SSH_DIR, "client_ed25519"), id);
  chmodSync(id, 0o600);
  let key = "";
  if (opts.known === "real") key = readFileSync(join(SSH_DIR, "host_ed25519.pub"), "utf8").split(" ").slice(0, 2).join(" ");
  if (opts.known === "changed") {
    sh(dir, `ssh-keygen -q -t ed25519 -N "" -f ${join(dir, "fake_host")}`);
    key = readFileSync(join(dir, "fake_host.pub"), "utf8").split(" ").slice(0, 2).join(" ");
  }
  writeFileSync(join(dir, "known_hosts"), key ? opts.ports.map((p) => `[127.0.0.1]:${p} ${key}\n`).join("") : "");
  writeFileSync(
    join(dir, "config"),
    `Host *\n  IdentityFile ${id}\n  IdentitiesOnly yes\n  UserKnownHostsFile ${join(dir, "known_hosts")}\n  GlobalKnownHostsFile /dev/null\n`,
  );
  writeFileSync(join(bin, "ssh"), `#!/bin/sh\nexec /usr/bin/ssh -F ${join(dir, "config")} "$@"\n`, { mode: 0o755 });
  return { dir, env: { PATH: `${bin}:${process.env.PATH}` } };
}

/** ssh processes whose command line names `text` (a tunnel lazy holds: its local socket, its port). */
export function sshProcesses(text: string): string[] {
  return sh("/", "ps -eo pid=,args=")
    .out.split("\n")
    .filter((l) => / (\/usr\/bin\/)?ssh /.test(` ${l.trim().split(/\s+/).slice(1).join(" ")}`) && l.includes(text))
    .map((l) => l.trim());
}

/**
 * The image a project on the test base runs (lazy's default image), present on the engine at
 * `host`. Its tag. Built on the first engine the way lazy builds it (Runtime.build: the engine's
 * API, lazy's context and build arguments) on the host's network, as `[container] build_network
 * = "host"` does: this is lazy's own Dockerfile, built by the test, and a fresh machine's default
 * bridge may not reach its DNS (npm's EAI_AGAIN). Then saved into the engine at `host`. Once per
 * engine and test process: a failure is kept, so the next test that needs the image fails at once
 * with the same cause instead of building again.
 */
export function remoteImage(host: string, root: string): Promise<string> {
  const plan = Image.plan(root, { base: TEST_IMAGES.node }, ["claude"]);
  if (plan.kind !== "build") return Promise.reject(new Error("expected lazy's default image"));
  const key = `${host} ${plan.tag}`;
  let made = images.get(key);
  if (!made) {
    made = imageOn(host, plan).catch((e: Error) => {
      throw new Error(`lazy's default image ${plan.tag} is not on ${host}: ${e.message}`);
    });
    images.set(key, made);
  } else made = made.catch((e: Error) => Promise.reject(new Error(`${e.message} (kept from an earlier test in this run)`)));
  return made;
}

const images = new Map<string, Promise<string>>();

async function imageOn(host: string, plan: Extract<Image.ImagePlan, { kind: "build" }>): Promise<string> {
  if (sh("/", `docker -H ${host} image inspect ${plan.tag}`).code === 0) return plan.tag;
  if (sh("/", `docker image inspect ${plan.tag}`).code !== 0) await buildLikeLazy(plan.tag, plan.dockerfile, plan.buildArgs);
  const l = sh("/", `docker save ${plan.tag} | docker -H ${host} load -q`);
  if (l.code !== 0) throw new Error(`loading it from the first engine failed: ${l.err.slice(-2000)}`);
  return plan.tag;
}

/** Build `tag` from a Dockerfile on the first engine through lazy's own build (its last lines when it fails). */
export async function buildLikeLazy(tag: string, dockerfile: string, buildArgs: Record<string, string>): Promise<void> {
  const quiet = () => {};
  const log = { debug: quiet, info: quiet, warn: quiet, error: quiet, repeated: quiet };
  const docker = await Runtime.connect(log);
  const lines: string[] = [];
  try {
    await docker.build({ tag, files: { Dockerfile: dockerfile }, buildArgs, network: "host" }, (l) => {
      lines.push(l);
      if (lines.length > 40) lines.shift();
    });
  } catch (e) {
    throw new Error(`building it on the first engine failed: ${(e as Error).message}\n${lines.join("\n")}`);
  }
}

/**
 * A test file's afterAll on the second engine: its projects' containers there, then every
 * daemon (cleanupAll), then their networks, objects and call volumes there (test/helpers/lazy.ts
 * cleans only the first engine's).
 */
export async function cleanupRemote(host: string, projects: Project[]): Promise<void> {
  const d2 = (args: string) => sh("/", `docker -H ${host} ${args}`);
  for (const p of projects)
    for (const c of d2(`ps -aq --filter label=dev.lazy.root=${p.root}`).out.split("\n").filter(Boolean)) d2(`rm -f ${c}`);
  const slugs = projects.map((p) => (existsSync(p.stateDir) ? basename(p.stateDir) : "")).filter((s) => s && s !== "daemon");
  await cleanupAll();
  for (const slug of slugs) {
    d2(`network rm lazy-${slug}`);
    d2(`volume rm lazy-objects-${slug}`);
    // lazy's own calls' project trees (a call cut short by a daemon that died leaves one).
    for (const v of d2(`volume ls -q --filter name=lazy-${slug}-call-`).out.split("\n").filter(Boolean)) d2(`volume rm ${v}`);
  }
}

/**
 * A test file on the second engine: the engine (over tcp, or over ssh with `ssh: true`) and a
 * mock Anthropic provider, up in a beforeAll that runs before the file's own; an afterAll
 * removes what `projects` left there. `host` is the address lazy is given (ssh:// or tcp://),
 * `tcp` the engine's own for docker -H (`d2`).
 */
export function onSecondEngine(opts: { ssh?: boolean } = {}) {
  const s = {
    mock: undefined as unknown as Mock.MockProvider,
    host: "",
    tcp: "",
    bind: "",
    port: 0,
    projects: [] as Project[],
    d2: (args: string) => sh("/", `docker -H ${s.tcp} ${args}`),
  };
  beforeAll(async () => {
    const e = secondEngine();
    Object.assign(s, { host: e.host, tcp: e.host, bind: e.bind });
    if (opts.ssh) {
      const x = secondEngineSsh();
      Object.assign(s, { host: x.host, port: x.port });
    }
    s.mock = await Mock.anthropic();
  }, 600_000);
  afterAll(async () => {
    await cleanupRemote(s.tcp, s.projects);
    await s.mock?.close();
  });
  return s;
}
