/**
 * A backend over an OS secret store (the macOS Keychain or the Secret Service): values live in
 * the OS store under (service, account = credential name); names and set times live in the
 * index. Loading also asks for the standard names the index lacks, so an item someone stored
 * with `secret-tool store service lazy account anthropic` is found too.
 */

import { LazyError } from "../util/errors";
import { ensurePrivateDir } from "../util/files";
import { type BackendImpl, type Stored, scrub } from "./backend";
import { folder } from "./file-backend";
import * as Index from "./index-file";
import { STANDARD } from "./kinds";

/** The narrow surface each OS store offers; one file per store implements it. */
export interface SecretApi {
  readonly kind: "keychain" | "secret-service";
  /** "the Secret Service", "the macOS Keychain" */
  readonly label: string;
  /** What to do when it fails, as the end of a sentence. */
  readonly remedy: string;
  /** `indexed`: lazy stored this name, so it is worth a slower, more thorough look. */
  get(name: string, indexed: boolean): Promise<string | null>;
  set(name: string, value: string): Promise<void>;
  delete(name: string): Promise<boolean>;
}

export function open(home: string, service: string, api: SecretApi): BackendImpl {
  ensurePrivateDir(folder(home));
  const store = `${api.kind}/${service}`;

  const failed = (verb: string, name: string, e: unknown, value?: string): LazyError => {
    const why = scrub(e instanceof Error ? e.message : String(e), value);
    return new LazyError("internal", `could not ${verb} credential "${name}" in ${api.label} (${why}); ${api.remedy}`);
  };

  return {
    kind: api.kind,
    where: `${api.label} (service "${service}")`,
    async load() {
      const indexed = Index.read(home, store);
      const names = [...new Set([...Object.keys(indexed), ...Object.keys(STANDARD)])];
      const out = new Map<string, Stored>();
      // One at a time, stopping at the first failure: a locked macOS keychain answers each
      // `security` call with an unlock dialog, and one per refresh is plenty.
      for (const name of names) {
        let value: string | null;
        try {
          value = await api.get(name, name in indexed);
        } catch (e) {
          throw failed("read", name, e);
        }
        if (value !== null) out.set(name, { value, setAt: indexed[name]?.setAt ?? null });
      }
      return out;
    },
    async set(name, value) {
      const setAt = new Date().toISOString();
      await Index.change(home, store, async (entries) => {
        try {
          await api.set(name, value);
        } catch (e) {
          throw failed("store", name, e, value);
        }
        entries[name] = { setAt };
      });
      return { value, setAt };
    },
    async remove(name) {
      return Index.change(home, store, async (entries) => {
        let deleted: boolean;
        try {
          deleted = await api.delete(name);
        } catch (e) {
          throw failed("remove", name, e);
        }
        const indexed = name in entries;
        delete entries[name];
        return deleted || indexed;
      });
    },
  };
}
