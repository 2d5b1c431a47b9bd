/**
 * What a task's container is made of: its environment (addresses and settings, never a
 * credential), its mounts (the repository as git needs it, never the person's checkout; the
 * agent's own folders writable; lazy's binary read-only), and where that binary comes from.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import * as Git from "../git";
import { HostNet } from "../network";
import { LazyError } from "../util/errors";

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

/**
 * A task's mounts: its worktree and admin folder, the repository as git needs it and nothing of
 * the person's checkout (git/view.ts: at the git folder's path lazy's view of it, read-only;
 * over it the repository's refs read-only and the task's private stand-ins; the objects
 * read-only behind the private objects' alternates), the agent's own folders, lazy's binary.
 */
export function mounts(g: Git.TaskGit, taskDir: string, binary: string) {
  return [
    ...repoMounts(g),
    { host: g.worktree, container: g.worktree, readOnly: false },
    { host: join(taskDir, "home"), container: "/lazy/home", readOnly: false },
    { host: join(taskDir, "harness"), container: "/lazy/harness", readOnly: false },
    { host: join(taskDir, "turns"), container: "/lazy/turns", readOnly: false },
    { host: binary, container: BIN, readOnly: true },
  ];
}

/** The repository as the task's worktree needs it (see mounts). */
function repoMounts(g: Git.TaskGit) {
  const common = g.commonDir;
  return [
    { host: g.view, container: common, readOnly: true },
    { host: join(common, "refs"), container: join(common, "refs"), readOnly: true },
    { host: join(common, "objects"), container: "/lazy/repo-objects", readOnly: true },
    { host: g.privateObjects, container: join(common, "objects"), readOnly: false },
    { host: g.privateRefs, container: join(common, "refs/heads/lazy"), readOnly: false },
    { host: g.privateLogs, container: join(common, "logs/refs/heads/lazy"), readOnly: false },
    { host: g.adminDir, container: g.adminDir, readOnly: false },
  ];
}

/**
 * A task's mounts on this machine's engine (mounts), and the host's CA bundle where one is
 * inherited ([container] inherit_network_env).
 */
export function taskMounts(g: Git.TaskGit, taskDir: string, hostCa: string | null) {
  return [...mounts(g, taskDir, linuxBinary()), ...caMount(hostCa)];
}

/** The host's CA bundle, read-only, when one is inherited. */
export const caMount = (hostCa: string | null) => (hostCa ? [{ host: hostCa, container: HostNet.CA_PATH, readOnly: true }] : []);

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
