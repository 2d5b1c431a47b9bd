/**
 * The broker's place in the daemon (src/broker): its deps from the rest of the daemon — the
 * grant registry (placeholders per task and service), the credential store, the audit, the
 * task store for events — and the names tests serve on loopback (`LAZY_RESOLVE`).
 */
import type { Database } from "bun:sqlite";
import { lookup } from "node:dns/promises";
import { Broker } from "../broker";
import type { Bus } from "../bus";
import type { Config } from "../config";
import type { CredentialStore } from "../credentials";
import { HostNet } from "../network";
import type { ModelProxy } from "../proxy";
import * as Store from "../store";
import type { Logger } from "../util/log";

/**
 * `LAZY_RESOLVE="git.lazy.test=127.0.0.1,npm.lazy.test=127.0.0.1"`: names this daemon resolves
 * itself, for tests that serve a name on loopback (no query leaves the machine). Not for users:
 * /etc/hosts is theirs.
 */
export function resolveMap(env: Record<string, string | undefined> = process.env): Record<string, string> | undefined {
  if (!env.LAZY_RESOLVE) return undefined;
  const map: Record<string, string> = {};
  for (const pair of env.LAZY_RESOLVE.split(",")) {
    const [name, address] = pair.split("=").map((s) => s.trim());
    if (name && address) map[name.toLowerCase()] = address;
  }
  return map;
}

/** node:dns's lookup with the map's names first. */
export function lookupWith(map: Record<string, string> | undefined) {
  if (!map) return undefined;
  return async (host: string) => {
    const a = map[host.toLowerCase()];
    return a ? [{ address: a, family: a.includes(":") ? 6 : 4 }] : lookup(host, { all: true });
  };
}

export function makeBroker(d: {
  root: string;
  stateDir: string;
  db: Database;
  bus: Bus;
  proxy: ModelProxy;
  credentials: CredentialStore;
  config: () => Config;
  log: Logger;
}): Broker {
  const told = new Map<string, number>();
  const broker = new Broker({
    root: d.root,
    stateDir: d.stateDir,
    config: d.config,
    grants: {
      all: () => d.proxy.grants.all(),
      version: () => d.proxy.grants.version(),
      // The proxy's threads learn of it too: a service placeholder sent to the model proxy is named as one.
      mint: (identity) => {
        const g = d.proxy.grants.mint(identity);
        void d.proxy.sync();
        return g;
      },
    },
    credential: (name) => d.credentials.get(name)?.value,
    branchOf: (taskId) => {
      const t = Store.Tasks.byId(d.db, taskId);
      return t ? (t.code ?? t.id) : null;
    },
    audit: d.proxy.audit,
    live: (taskId) => d.proxy.isLive(taskId),
    tell: (taskId, service, what) => {
      d.log.warn(`service ${service}${taskId ? ` (task ${taskId})` : ""}: ${what}`);
      if (!taskId) return;
      // Once a minute per task, service and message: a failing source is asked on every request.
      const key = `${taskId}\u0000${service}\u0000${what}`;
      if (Date.now() - (told.get(key) ?? 0) < 60_000) return;
      told.set(key, Date.now());
      Store.Tasks.addEvent(d.db, taskId, "broker", { service, what });
      d.bus.publish({ kind: "task", taskId });
    },
    log: d.log,
    resolve: resolveMap(),
    proxy: (host, port) => {
      if (!d.config().container.inherit_network_env) return false;
      // The host's own proxy for this origin (NO_PROXY honoured), as its variable spells it.
      const e = process.env;
      if (!HostNet.proxyFor(host, e, { port, kind: "connect" })) return false;
      return e.https_proxy || e.HTTPS_PROXY || e.all_proxy || e.ALL_PROXY || e.http_proxy || e.HTTP_PROXY || false;
    },
  });
  // A task that ended for good: its GitHub App token (and the like) is dropped.
  d.bus.subscribe((c) => {
    try {
      if (c.kind !== "task" || !c.taskId) return;
      const t = Store.Tasks.byId(d.db, c.taskId);
      if (!t || Store.isFinal(t.status)) broker.forgetTask(c.taskId);
    } catch {} // a bus listener must not throw (AGENTS.md)
  });
  return broker;
}
