/**
 * The Secret Service (GNOME Keyring, KWallet, …) through `Bun.secrets`, which talks libsecret
 * in-process: the value never crosses a process boundary or an argv. Items are
 * (service, account = credential name), the attributes `secret-tool` uses too.
 *
 * Where secret-tool is installed it is the referee (see secret-tool.ts for the gnome-keyring
 * trap): a name lazy stored that Bun no longer sees is looked up schema-agnostically, and every
 * write ends with exactly one item for its name. Bun.secrets alone reports a locked keyring as
 * "not found"; the secret-tool look reports it as locked.
 */
import type { SecretApi } from "./os-store";
import * as SecretTool from "./secret-tool";

const TIMEOUT_MS = 5_000;

/** A keyring waiting on an unlock prompt nobody will answer must not hang the daemon. */
function bounded<T>(p: Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`the Secret Service did not answer within ${TIMEOUT_MS / 1000} s (a locked keyring?)`)),
      TIMEOUT_MS,
    );
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

function describe(e: unknown): string {
  const code = (e as { code?: unknown })?.code;
  const msg = e instanceof Error ? e.message : String(e);
  return typeof code === "string" ? `${code}: ${msg}` : msg;
}

/** Bun.secrets alone, no referee: the probe, and machines without secret-tool. */
function bunOnly(service: string) {
  return {
    get: (name: string) => bounded(Bun.secrets.get({ service, name })),
    set: (name: string, value: string) => bounded(Bun.secrets.set({ service, name, value })),
    delete: (name: string) => bounded(Bun.secrets.delete({ service, name })),
  };
}

export function api(service: string, useSecretTool = SecretTool.available()): SecretApi {
  const bun = bunOnly(service);
  const base = {
    kind: "secret-service" as const,
    label: "the Secret Service",
    remedy: "check that the keyring is running and unlocked, or set LAZY_CREDENTIAL_BACKEND=file",
  };
  if (!useSecretTool) return { ...base, get: (name) => bun.get(name), set: bun.set, delete: bun.delete };
  return {
    ...base,
    async get(name, indexed) {
      const v = await bun.get(name);
      // Only names lazy stored get the extra look, so an absent standard name costs no spawn.
      // It also tells a locked keyring (an error: keep the values in memory) from a removal.
      if (v !== null || !indexed) return v;
      return (await SecretTool.values(service, name)).at(-1) ?? null;
    },
    async set(name, value) {
      await bun.set(name, value);
      const after = await SecretTool.values(service, name);
      if (after.length === 1 && after[0] === value) return;
      // Another program's item (without Bun's tag) sits beside ours: make the name one item.
      await SecretTool.clear(service, name);
      await bun.set(name, value);
      const again = await SecretTool.values(service, name);
      if (again.length !== 1 || again[0] !== value) throw new Error(`it holds ${again.length} items for this name after a clean store`);
    },
    async delete(name) {
      const ours = await bun.delete(name);
      const others = await SecretTool.clear(service, name);
      return ours || others;
    },
  };
}

/**
 * Whether a Secret Service really works here: store, read back and clear a throwaway item.
 * A bare lookup is not enough (it "succeeds" with nothing behind it). Returns why not, or
 * undefined when it works. The probe's account starts with "." so it can never be a
 * credential name, and carries the pid so two daemons probing at once don't collide.
 */
export async function probe(service: string): Promise<string | undefined> {
  const s = bunOnly(service);
  const name = `.probe-${process.pid}-${crypto.randomUUID().slice(0, 8)}`;
  const value = crypto.randomUUID();
  try {
    await s.set(name, value);
    const back = await s.get(name);
    const cleared = await s.delete(name);
    if (back !== value) return "a probe item did not read back";
    if (!cleared) return "a probe item could not be cleared";
    return undefined;
  } catch (e) {
    return describe(e);
  }
}
