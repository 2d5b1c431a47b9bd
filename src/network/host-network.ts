/**
 * The host's network setup that builds and task containers inherit (`[container]
 * inherit_network_env`, on by default): the extra CA certificates a company proxy re-signs TLS
 * with (NODE_EXTRA_CA_CERTS, SSL_CERT_FILE, /usr/local/share/ca-certificates) and the proxy
 * variables (HTTP_PROXY, HTTPS_PROXY, NO_PROXY, lower-case too).
 *
 * The certificates are public: they go into a build as one bundle file copied after each FROM,
 * with the variables tools read pointed at it (ENV: a base image's own NODE_EXTRA_CA_CERTS
 * would win over an ARG), and into a task container as the same file mounted read-only. The proxy variables go
 * to a build as Docker's predefined build args, which `docker history` never shows. A task
 * container never gets a proxy URL with a password in it (the agent could send it anywhere):
 * under the fence its proxy is lazy's egress proxy; under "open" a proxy with credentials is
 * left out, and the daemon log says so.
 */
import { createHash, X509Certificate } from "node:crypto";
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { readRegular } from "../util/bounded-read";
import { LazyError } from "../util/errors";
import * as NoProxy from "../util/no-proxy";

/** Where the bundle sits in a build and in a task container. */
export const CA_PATH = "/usr/local/share/lazy/host-ca.pem";
/** The bundle's name in a build context. */
export const CA_CONTEXT_NAME = ".lazy-host-ca.pem";
/** The system's folder of extra CA certificates (Debian's update-ca-certificates reads it). */
export const LOCAL_CA_DIR = "/usr/local/share/ca-certificates";
const SYSTEM_BUNDLE = "/etc/ssl/certs/ca-certificates.crt";
/** The variables tools read a CA bundle from. */
export const CA_VARS = ["NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "CURL_CA_BUNDLE", "REQUESTS_CA_BUNDLE", "GIT_SSL_CAINFO"] as const;
export const PROXY_VARS = ["HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy"] as const;
const MAX_CA_FILE = 8 * 1024 * 1024;

export interface HostNetwork {
  /** The certificates, one PEM bundle, and the files they came from (each with the variable that named it). */
  ca: { pem: string; sources: string[]; hash: string; full: boolean } | null;
  /** The proxy variables the host has set, as set. */
  proxy: Record<string, string>;
}

/**
 * The host's CA certificates and proxy variables, each CA file checked: a file that is not
 * PEM certificates is refused naming it and the variable that pointed at it.
 */
export function read(env: Record<string, string | undefined> = process.env): HostNetwork {
  const files: { path: string; from: string }[] = [];
  for (const v of ["SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS"] as const) {
    const path = env[v];
    if (path && !files.some((f) => f.path === path)) files.push({ path, from: v });
  }
  // The variables that replace a tool's whole store (SSL_CERT_FILE...) need the public roots
  // too: the host's own bundle goes first when no SSL_CERT_FILE names one.
  if (!env.SSL_CERT_FILE && existsSync(SYSTEM_BUNDLE)) files.unshift({ path: SYSTEM_BUNDLE, from: "the system bundle" });
  if (existsSync(LOCAL_CA_DIR))
    for (const name of readdirSync(LOCAL_CA_DIR).sort())
      if (name.endsWith(".crt")) files.push({ path: join(LOCAL_CA_DIR, name), from: LOCAL_CA_DIR });
  // Parsing ~150 certificates costs ~10 ms and a launch asks several times: kept while no file changed.
  const key = JSON.stringify([
    files.map((f) => [f.path, f.from, statSync(f.path, { throwIfNoEntry: false })?.mtimeMs]),
    PROXY_VARS.map((v) => env[v]),
  ]);
  if (last?.key === key) return last.value;
  const value = parse(files, env);
  last = { key, value };
  return value;
}

let last: { key: string; value: HostNetwork } | undefined;

function parse(files: { path: string; from: string }[], env: Record<string, string | undefined>): HostNetwork {
  const full = files.some((f) => f.from === "SSL_CERT_FILE" || f.from === "the system bundle");
  const pems: string[] = [];
  for (const f of files) pems.push(...certificatesOf(f.path, f.from));
  const proxy: Record<string, string> = {};
  for (const v of PROXY_VARS) if (env[v]) proxy[v] = env[v]!;
  // Only the system's own bundle: nothing extra to carry.
  if (!pems.length || files.every((f) => f.path === SYSTEM_BUNDLE)) return { ca: null, proxy };
  const pem = `${[...new Set(pems)].join("\n")}\n`;
  const hash = createHash("sha256").update(pem).digest("hex").slice(0, 12);
  return { ca: { pem, sources: files.map((f) => `${f.path} (${f.from})`), hash, full }, proxy };
}

/** Every certificate in a PEM file, each parsed; a file with none, or one that does not parse, is named. */
export function certificatesOf(path: string, from: string): string[] {
  const refuse = (why: string) =>
    new LazyError(
      "launch_refused",
      `The CA file ${path} (from ${from}) ${why}; fix it or ${from === LOCAL_CA_DIR ? "remove it" : `unset ${from}`}, then run lazy daemon restart.`,
    );
  if (!statSync(path, { throwIfNoEntry: false })?.isFile()) throw refuse("does not exist or is not a file");
  const r = readRegular(path, MAX_CA_FILE);
  if (!("text" in r)) throw refuse(r.why);
  const blocks = r.text.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? [];
  if (!blocks.length) throw refuse("holds no PEM certificate (-----BEGIN CERTIFICATE-----)");
  blocks.forEach((b, i) => {
    try {
      new X509Certificate(b);
    } catch (e) {
      throw refuse(`does not parse: certificate ${i + 1} of ${blocks.length}: ${(e as Error).message}`);
    }
  });
  return blocks;
}

/** A proxy URL with a user or password in it. */
export const hasCredentials = (url: string): boolean => {
  try {
    const u = new URL(url);
    return !!(u.username || u.password);
  } catch {
    return /@/.test(url);
  }
};

/** A proxy URL as it may be shown (its password, if any, replaced). */
export const shown = (url: string): string =>
  url.replace(
    /^([a-z][\w+.-]*:\/\/)?([^@/]*)@/i,
    (_m, scheme: string | undefined, who: string) => `${scheme ?? ""}${who.split(":")[0]}:***@`,
  );

/**
 * A Dockerfile as built with the host's certificates: after each FROM, the bundle copied in and
 * the CA variables pointed at it (so `npm install`, curl, git and pip trust the company's proxy).
 */
export function withCa(dockerfile: string, ca: { full: boolean }): string {
  const vars = caVars(ca).map((v) => `${v}=${CA_PATH}`);
  // ENV, not ARG: a base image's own ENV of the same name (NODE_EXTRA_CA_CERTS) wins over an ARG.
  const prelude = `COPY ${CA_CONTEXT_NAME} ${CA_PATH}\nENV ${vars.join(" ")}`;
  return dockerfile.replace(/^([ \t]*FROM[ \t][^\n]*)$/gim, `$1\n${prelude}`);
}

/** A task container's share: the CA variables (the bundle is mounted at CA_PATH) and the proxy variables it may have. */
export function containerEnv(host: HostNetwork, fenced: boolean): { env: Record<string, string>; withheld: string[] } {
  const env: Record<string, string> = {};
  if (host.ca) for (const v of caVars(host.ca)) env[v] = CA_PATH;
  const withheld: string[] = [];
  // Under the fence the container's proxy is lazy's egress proxy (set by the fence), never the host's.
  if (!fenced)
    for (const [k, v] of Object.entries(host.proxy)) {
      if (hasCredentials(v)) withheld.push(k);
      else env[k] = v;
    }
  return { env, withheld };
}

/** For the daemon log: the bundle's sources and the proxy in use (its password never). */
export function describe(host: HostNetwork): string {
  const parts: string[] = [];
  if (host.ca) parts.push(`CA certificates from ${host.ca.sources.join(", ")}`);
  const proxy = host.proxy.HTTPS_PROXY ?? host.proxy.https_proxy ?? host.proxy.HTTP_PROXY ?? host.proxy.http_proxy;
  if (proxy) parts.push(`proxy ${shown(proxy)}`);
  return parts.length ? ` (with the host's ${parts.join("; ")})` : "";
}

/** Node adds to its roots; the others replace a tool's store, so only with the public roots in the bundle. */
const caVars = (ca: { full: boolean }): readonly string[] => (ca.full ? CA_VARS : ["NODE_EXTRA_CA_CERTS"]);

/**
 * The host's proxy for a connection to `host:port`, for lazy's egress proxy to chain behind
 * (its credentials stay on the host): for plain HTTP (`http`) http_proxy, for a tunnel
 * (`connect`) https_proxy, each lower case first as curl reads them, then ALL_PROXY, then the
 * other scheme's (a host with one proxy variable set is behind that proxy for both) — unless
 * NO_PROXY names the host (util/no-proxy.ts: names, parent domains, addresses, CIDR blocks,
 * ports, `*`, as curl and Bun's fetch match them).
 */
export function proxyFor(
  host: string,
  env: Record<string, string | undefined> = process.env,
  to: { port: number; kind: "http" | "connect" } = { port: 443, kind: "connect" },
): { host: string; port: number; auth: string | null; shown: string } | null {
  const http = env.http_proxy || env.HTTP_PROXY;
  const https = env.https_proxy || env.HTTPS_PROXY;
  const all = env.all_proxy || env.ALL_PROXY;
  const url = to.kind === "http" ? http || all || https : https || all || http;
  if (!url) return null;
  if (NoProxy.bypass(host, to.port, NoProxy.listOf(env))) return null;
  let u: URL;
  try {
    u = new URL(url.includes("://") ? url : `http://${url}`);
  } catch {
    return null;
  }
  if (u.protocol !== "http:") return null;
  const auth = u.username
    ? `Basic ${Buffer.from(`${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`).toString("base64")}`
    : null;
  return { host: u.hostname.replace(/^\[|\]$/g, ""), port: Number(u.port || 80), auth, shown: shown(url) };
}

/**
 * A build's progress as the person's Dockerfile numbers it: the steps withCa added after each
 * FROM are not shown, and the others keep their own numbers ("step 3/4" is their third line).
 */
export class StepNumbers {
  private seen = 0;
  private readonly hidden: number;

  constructor(dockerfile: string) {
    // Two steps (COPY, ENV) after each FROM.
    this.hidden = 2 * (dockerfile.split(`\nCOPY ${CA_CONTEXT_NAME} ${CA_PATH}\n`).length - 1);
  }

  /** The line as shown, or null for a step lazy added. */
  line(l: string): string | null {
    if (!this.hidden) return l;
    const m = /^Step (\d+)\/(\d+) : (.*)$/s.exec(l);
    if (!m) return l;
    if (m[3]!.startsWith(`COPY ${CA_CONTEXT_NAME} `) || m[3]!.startsWith(`ENV NODE_EXTRA_CA_CERTS=${CA_PATH}`)) {
      this.seen++;
      return null;
    }
    return `Step ${Number(m[1]) - this.seen}/${Number(m[2]) - this.hidden} : ${m[3]}`;
  }
}
