/**
 * What a task's container is made of: its environment (addresses and settings, never a
 * credential), its mounts (the project read-only, the agent's own folders writable, lazy's
 * binary read-only), and where that binary comes from.
 */
import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import * as Git from "../git";
import { LazyError } from "../util/errors";
import * as HostNet from "./host-network";

export const BIN = "/lazy/bin/lazy";

/**
 * The container's environment: addresses and settings only, never a credential. The person's
 * git identity is asked without blocking the daemon's thread; a launch asks once, beside its
 * other steps.
 */
export async function containerEnvOf(root: string): Promise<Record<string, string>> {
  const [name, email] = await Promise.all(
    IDENTITY.map(async (key) => (await Git.gitAsync(root, ["config", key], { allowFail: true })).out),
  );
  return envWith(name!, email!);
}

const IDENTITY = ["user.name", "user.email"] as const;

function envWith(name: string, email: string): Record<string, string> {
  return {
    HOME: "/lazy/home",
    LAZY_IN_CONTAINER: "1",
    // Whatever the image: the repository is owned by the host user, the agent is another uid.
    GIT_CONFIG_COUNT: "3",
    GIT_CONFIG_KEY_0: "safe.directory",
    GIT_CONFIG_VALUE_0: "*",
    GIT_CONFIG_KEY_1: "user.name",
    GIT_CONFIG_VALUE_1: name.trim() || "lazy agent",
    GIT_CONFIG_KEY_2: "user.email",
    GIT_CONFIG_VALUE_2: email.trim() || "agent@lazy.invalid",
  };
}

export function mounts(root: string, whole: boolean, g: Git.TaskGit, taskDir: string, binary: string) {
  return [
    // The project, read-only: the docs rely on nothing secret living there. Where the agent
    // could not open it anyway (lazy runs as root, the checkout is a 0700 `mktemp -d` folder),
    // only its git folder, at its host path (the worktree's pointers name it): Docker makes the
    // folders above a mount point passable, so no permission of the person's changes.
    whole ? { host: root, container: root, readOnly: true } : { host: g.commonDir, container: g.commonDir, readOnly: true },
    { host: join(g.commonDir, "objects"), container: "/lazy/repo-objects", readOnly: true },
    { host: g.privateObjects, container: join(g.commonDir, "objects"), readOnly: false },
    { host: g.privateRefs, container: join(g.commonDir, "refs/heads/lazy"), readOnly: false },
    { host: g.privateLogs, container: join(g.commonDir, "logs/refs/heads/lazy"), readOnly: false },
    { host: g.adminDir, container: g.adminDir, readOnly: false },
    { host: g.worktree, container: g.worktree, readOnly: false },
    { host: join(taskDir, "home"), container: "/lazy/home", readOnly: false },
    { host: join(taskDir, "harness"), container: "/lazy/harness", readOnly: false },
    { host: join(taskDir, "turns"), container: "/lazy/turns", readOnly: false },
    { host: binary, container: BIN, readOnly: true },
  ];
}

/**
 * A task's mounts on this machine's engine: the project whole where the agent can read it (as
 * root, a 0700 checkout gets only its git folder), and the host's CA bundle where one is
 * inherited ([container] inherit_network_env).
 */
export function taskMounts(root: string, g: Git.TaskGit, taskDir: string, hostCa: string | null) {
  const whole = process.getuid?.() !== 0 || (statSync(root).mode & 0o005) === 0o005;
  return [
    ...mounts(root, whole, g, taskDir, linuxBinary()),
    ...(hostCa ? [{ host: hostCa, container: HostNet.CA_PATH, readOnly: true }] : []),
  ];
}

/** The Linux build of this very version, mounted into containers (on a Mac: dist/lazy-linux-*). */
export function linuxBinary(): string {
  if (process.env.LAZY_LINUX_BINARY) return process.env.LAZY_LINUX_BINARY;
  const self = process.execPath.replace(/ \(deleted\)$/, "");
  if (process.platform === "linux" && !/\/bun$/.test(self)) return self;
  const arch = process.arch === "arm64" ? "arm64" : "x64";
  const sibling = join(self, "..", `lazy-linux-${arch}`);
  if (existsSync(sibling)) return sibling;
  throw new LazyError(
    "launch_refused",
    `Task containers need the Linux build of lazy (${sibling}); build it with bun run build --all, or set LAZY_LINUX_BINARY.`,
  );
}
