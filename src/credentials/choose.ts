/**
 * Which backend holds the credentials, decided once when a store opens. macOS uses the
 * Keychain; Linux uses the Secret Service only when a real store/lookup/clear round trip
 * works; anything else uses the file store. LAZY_CREDENTIAL_BACKEND (or the caller) can force
 * one, and forcing one that does not work here is an error, never a quiet fallback.
 */
import { LazyError } from "../util/errors";
import type { BackendImpl } from "./backend";
import * as FileBackend from "./file-backend";
import * as Index from "./index-file";
import * as Keychain from "./keychain";
import { BACKENDS, type Backend } from "./kinds";
import * as OsStore from "./os-store";
import * as SecretService from "./secret-service";

export interface Chosen {
  impl: BackendImpl;
  note: string;
}

function isBackend(s: string): s is Backend {
  return (BACKENDS as readonly string[]).includes(s);
}

export async function choose(opts: {
  home: string;
  env: Record<string, string | undefined>;
  backend: Backend | "auto";
  service: string;
}): Promise<Chosen> {
  const { home, service } = opts;
  const fromEnv = opts.env.LAZY_CREDENTIAL_BACKEND?.trim();
  if (opts.backend !== "auto") return forced(opts.backend, `the backend was set to ${opts.backend}`, home, service);
  if (fromEnv) {
    if (!isBackend(fromEnv)) {
      throw new LazyError("config_invalid", `LAZY_CREDENTIAL_BACKEND="${fromEnv}" is not one of ${BACKENDS.join(", ")}; fix or unset it`);
    }
    return forced(fromEnv, `LAZY_CREDENTIAL_BACKEND=${fromEnv}`, home, service);
  }

  if (process.platform === "darwin") {
    const missing = Keychain.available();
    if (!missing) {
      const impl = OsStore.open(home, service, Keychain.api(service));
      return { impl, note: `macOS: using ${impl.where}.` };
    }
    return fallBack(`the macOS Keychain is unavailable (${missing})`, home);
  }
  if (process.platform === "linux") {
    const broken = await SecretService.probe(service);
    if (!broken) {
      const impl = OsStore.open(home, service, SecretService.api(service));
      return { impl, note: `The Secret Service passed a store/lookup/clear probe; using ${impl.where}.` };
    }
    return fallBack(`Secret Service unavailable (${broken})`, home);
  }
  return fallBack(`no OS credential store is supported on ${process.platform}`, home);
}

async function forced(backend: Backend, by: string, home: string, service: string): Promise<Chosen> {
  if (backend === "file") {
    const impl = FileBackend.open(home);
    return { impl, note: `${by}: using ${impl.where}.` };
  }
  if (backend === "keychain") {
    const missing = Keychain.available();
    if (missing)
      throw new LazyError("config_invalid", `${by}, but the macOS Keychain is unavailable (${missing}); unset it or choose file`);
    const impl = OsStore.open(home, service, Keychain.api(service));
    return { impl, note: `${by}: using ${impl.where}.` };
  }
  // On macOS and Windows Bun.secrets talks to their own stores, which this label would misname.
  const broken = process.platform === "linux" ? await SecretService.probe(service) : "lazy uses it on Linux only";
  if (broken) {
    throw new LazyError(
      "config_invalid",
      `${by}, but the Secret Service is unavailable (${broken}); start one (gnome-keyring) and unlock it, or choose file`,
    );
  }
  const impl = OsStore.open(home, service, SecretService.api(service));
  return { impl, note: `${by}: using ${impl.where}.` };
}

function fallBack(why: string, home: string): Chosen {
  const impl = FileBackend.open(home);
  // Credentials stored in an OS store earlier are out of reach now; say so instead of
  // letting them look lost.
  const shadowed = Index.count(home);
  const extra = shadowed ? ` ${shadowed} credential(s) lazy stored in an OS store earlier are not reachable from this process.` : "";
  return { impl, note: `${why}; using ${impl.where}.${extra}` };
}
