/**
 * This machine's second Docker engine, standing in for a remote one (scripts/second-engine.sh:
 * loopback tcp, its own mount namespace, bridge 10.213.0.1/24, networks from 10.214.0.0/16),
 * and the task image on it. No registry is reachable and its containers have no NAT, so the
 * image is built on the first engine (as lazy would build it) and loaded into the second.
 */
import { basename, join } from "node:path";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { type Project, cleanupAll, sh } from "./lazy";
import { TEST_IMAGES } from "./env";
import { Image } from "../../src/containers";

const SCRIPT = join(import.meta.dir, "../../scripts/second-engine.sh");

/** Start the second engine if it is not up (idempotent, fast when it is): its DOCKER_HOST, and the host address its containers reach. */
export function secondEngine(): { host: string; bind: string } {
  const r = sh("/", `bash ${SCRIPT}`);
  if (r.code !== 0) throw new Error(`scripts/second-engine.sh failed: ${r.err.slice(-2000)}`);
  return { host: r.out.trim().split("\n").at(-1)!, bind: "10.213.0.1" };
}

/** The image a project on the test base runs (lazy's default image), present on the engine at `host`. Its tag. */
export async function remoteImage(host: string, root: string): Promise<string> {
  const plan = Image.plan(root, { base: TEST_IMAGES.node });
  if (plan.kind !== "build") throw new Error("expected lazy's default image");
  if (sh("/", `docker -H ${host} image inspect ${plan.tag}`).code === 0) return plan.tag;
  if (sh("/", `docker image inspect ${plan.tag}`).code !== 0) {
    const ctx = mkdtempSync(join(tmpdir(), "lazy-img-"));
    writeFileSync(join(ctx, "Dockerfile"), plan.dockerfile);
    const args = Object.entries(plan.buildArgs)
      .map(([k, v]) => `--build-arg ${k}=${v}`)
      .join(" ");
    const b = sh(ctx, `docker build -q ${args} -t ${plan.tag} .`);
    rmSync(ctx, { recursive: true, force: true });
    if (b.code !== 0) throw new Error(`building ${plan.tag} on the first engine failed: ${b.err.slice(-2000)}`);
  }
  const l = sh("/", `docker save ${plan.tag} | docker -H ${host} load -q`);
  if (l.code !== 0) throw new Error(`loading ${plan.tag} into ${host} failed: ${l.err.slice(-2000)}`);
  return plan.tag;
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
