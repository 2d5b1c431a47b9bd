/**
 * The file store, for machines with neither a keychain nor a Secret Service: one JSON file,
 * `<home>/credentials/credentials.json`, 0600 in a 0700 folder, replaced atomically. Every
 * write is a read-modify-write under a kernel flock, because each project has its own daemon
 * and two of them may set two different names at the same moment.
 */
import { chmodSync, existsSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { LazyError } from "../util/errors";
import { ensurePrivateDir, writeFileAtomic } from "../util/files";
import { lock } from "../util/flock";
import { create } from "../util/log";
import { isAlive } from "../util/process";
import type { BackendImpl, Stored } from "./backend";

const log = create("credentials");

export const FileData = z
  .object({
    version: z.literal(1),
    credentials: z.record(
      z.string(),
      z.object({
        value: z.string().describe("The secret itself"),
        setAt: z.string().describe("ISO time it was stored"),
      }),
    ),
  })
  .describe("credentials.json: the file store's whole content");
type FileData = z.infer<typeof FileData>;

export function folder(home: string): string {
  return join(home, "credentials");
}

export function lockPath(home: string): string {
  return join(folder(home), ".lock");
}

/**
 * Read a private JSON file of lazy's. Parse errors are reported by file and field only: a
 * JSON.parse message quotes the text around the fault, and here that text is a secret.
 */
export function readPrivateJson<T>(path: string, schema: z.ZodType<T>, what: string): T | undefined {
  if (!existsSync(path)) return undefined;
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, "utf8"));
  } catch {
    throw new LazyError("config_invalid", `${what} at ${path} is not valid JSON; fix it or remove it and set the credentials again`);
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    const fields = parsed.error.issues.map((i) => i.path.join(".") || "(top)").join(", ");
    throw new LazyError(
      "config_invalid",
      `${what} at ${path} is not in the expected shape (${fields}); fix it or remove it and set the credentials again`,
    );
  }
  return parsed.data;
}

/** A file someone loosened by hand (an editor, a copy) is tightened back, loudly. */
export function tighten(path: string): void {
  if (!existsSync(path)) return;
  const mode = statSync(path).mode & 0o777;
  if ((mode & 0o077) === 0) return;
  chmodSync(path, 0o600);
  log.warn(`${path} was mode ${mode.toString(8)}; set it back to 600`);
}

/**
 * A process killed between writeFileAtomic's open and rename leaves `.<file>.<pid>.<hex>.tmp`
 * behind, holding secrets. Remove those whose writer is dead; a live writer's is about to be
 * renamed and is left alone.
 */
export function sweep(dir: string): void {
  for (const f of readdirSync(dir)) {
    const pid = /^\..+\.(\d+)\.[0-9a-f]+\.tmp$/.exec(f)?.[1];
    if (pid === undefined || isAlive(Number(pid))) continue;
    rmSync(join(dir, f), { force: true });
    log.warn(`removed ${join(dir, f)}, left by a process that died while writing it`);
  }
}

export function open(home: string): BackendImpl {
  const dir = folder(home);
  const path = join(dir, "credentials.json");
  ensurePrivateDir(dir);
  tighten(path);
  sweep(dir);
  const read = (): FileData => readPrivateJson(path, FileData, "The credential file") ?? { version: 1, credentials: {} };

  /** Read-modify-write under the lock; `fn` returns false when it changed nothing. */
  const change = async (fn: (data: FileData) => boolean): Promise<boolean> => {
    const held = await lock(lockPath(home));
    try {
      const data = read();
      const changed = fn(data);
      if (changed) writeFileAtomic(path, JSON.stringify(data, null, 2) + "\n");
      return changed;
    } finally {
      held.release();
    }
  };

  return {
    kind: "file",
    where: `the file store at ${path}`,
    async load() {
      // No lock: the file is only ever replaced by rename, so a read sees one whole version.
      const out = new Map<string, Stored>();
      for (const [name, c] of Object.entries(read().credentials)) out.set(name, { value: c.value, setAt: c.setAt });
      return out;
    },
    async set(name, value) {
      const setAt = new Date().toISOString();
      await change((data) => {
        data.credentials[name] = { value, setAt };
        return true;
      });
      return { value, setAt };
    },
    remove(name) {
      return change((data) => {
        if (!(name in data.credentials)) return false;
        delete data.credentials[name];
        return true;
      });
    },
  };
}
