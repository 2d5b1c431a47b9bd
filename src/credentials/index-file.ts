/**
 * The non-secret index of what lazy stored in an OS store: names and when each was set.
 * Neither Bun.secrets nor a plain `security` call can list a service's items, so `lazy auth
 * list` reads this. It holds no value, yet lives 0600 beside the file store and is changed
 * under the same flock.
 */
import { join } from "node:path";
import { z } from "zod";
import { writeFileAtomic } from "../util/files";
import { lock } from "../util/flock";
import { folder, lockPath, readPrivateJson, tighten } from "./file-backend";

export const IndexData = z
  .object({
    version: z.literal(1),
    stores: z
      .record(z.string(), z.record(z.string(), z.object({ setAt: z.string().describe("ISO time lazy stored it") })))
      .describe('Per OS store ("secret-service/lazy", "keychain/lazy"): credential name → when it was set'),
  })
  .describe("index.json: which names lazy keeps in an OS store; never a value");
type IndexData = z.infer<typeof IndexData>;

export type Entries = Record<string, { setAt: string }>;

export function path(home: string): string {
  return join(folder(home), "index.json");
}

function readAll(home: string): IndexData {
  return readPrivateJson(path(home), IndexData, "The credential index") ?? { version: 1, stores: {} };
}

export function read(home: string, store: string): Entries {
  tighten(path(home));
  return readAll(home).stores[store] ?? {};
}

/** Every name the index holds for any store: used to warn when the file store shadows them. */
export function count(home: string): number {
  return Object.values(readAll(home).stores).reduce((n, names) => n + Object.keys(names).length, 0);
}

/**
 * Run `fn` (the OS-store write) and the index update as one step under the flock, so two
 * daemons indexing two names at once lose neither. The index is rewritten only if `fn`
 * changed the entries.
 */
export async function change<T>(home: string, store: string, fn: (entries: Entries) => Promise<T>): Promise<T> {
  const held = await lock(lockPath(home));
  try {
    const data = readAll(home);
    const entries = { ...data.stores[store] };
    const before = JSON.stringify(entries);
    const out = await fn(entries);
    if (JSON.stringify(entries) !== before) {
      data.stores[store] = entries;
      writeFileAtomic(path(home), JSON.stringify(data, null, 2) + "\n");
    }
    return out;
  } finally {
    held.release();
  }
}
