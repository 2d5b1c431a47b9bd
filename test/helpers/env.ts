// Test-environment helpers. The machine is prepared by scripts/setup-test-env.sh
// (docker engine + the local images below); no image registry is reachable.

/** Images built locally by scripts/setup-test-env.sh. */
export const TEST_IMAGES = {
  debian: "lazy-test/debian:bookworm",
  node: "lazy-test/node:bookworm",
} as const;

const DOCKER_INFO_TIMEOUT_MS = 5_000;

function inCI(): boolean {
  const ci = process.env.CI;
  return ci !== undefined && ci !== "" && ci !== "0" && ci.toLowerCase() !== "false";
}

let cached: Promise<boolean> | undefined;

/** True when `docker info` succeeds within 5 s. Checked once per test process. */
export function dockerAvailable(): Promise<boolean> {
  cached ??= probeDocker();
  return cached;
}

async function probeDocker(): Promise<boolean> {
  let proc: ReturnType<typeof Bun.spawn>;
  try {
    proc = Bun.spawn(["docker", "info"], { stdin: "ignore", stdout: "ignore", stderr: "ignore" });
  } catch {
    return false; // no docker CLI on PATH
  }
  const timer = setTimeout(() => proc.kill(), DOCKER_INFO_TIMEOUT_MS);
  try {
    return (await proc.exited) === 0;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * For docker-backed tests: resolves true when docker works. When it does not, throws
 * in CI (CI env set) so those tests never silently skip there; elsewhere warns and
 * resolves false so the caller can skip:
 *
 *   const hasDocker = await requireDocker();
 *   describe.skipIf(!hasDocker)("containers", () => { ... });
 */
export async function requireDocker(): Promise<boolean> {
  // bun run test:fast (scripts/test-fast.ts) has no engine on purpose: a file here is in the wrong tier.
  if (process.env.LAZY_TEST_TIER === "fast")
    throw new Error(
      "this file needs Docker but runs in the fast tier: scripts/test-tiers.ts puts a file that names a Docker fixture, or says `tier: docker` in a comment, in the docker tier",
    );
  if (await dockerAvailable()) return true;
  const msg =
    "Docker engine unavailable (`docker info` failed or took over 5 s). " +
    "Run `bash scripts/setup-test-env.sh` (starts dockerd, builds " +
    `${TEST_IMAGES.debian} and ${TEST_IMAGES.node}).`;
  if (inCI()) throw new Error(`${msg} Docker tests must not be skipped in CI.`);
  console.warn(`[test] skipping docker tests: ${msg}`);
  return false;
}

/** For a file whose tests all need Docker: throws, saying how to start one, when there is none. */
export async function needDocker(): Promise<void> {
  if (!(await requireDocker())) throw new Error("these tests need a Docker engine: bash scripts/setup-test-env.sh starts one");
}
