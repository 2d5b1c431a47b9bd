import { existsSync } from "node:fs";
import { join } from "node:path";
import { type Config, defaultProfile, FILE, formatProblem, load, readConfigText, secretUrls, Trust } from "../../config";
import { bindFor, Engine, Runtime } from "../../containers";
import { type DaemonStatus, Keeper, State, Words } from "../../daemon";
import { Subnets } from "../../network";
import { desktopTool } from "../../notify";
import { engineFinding, type Finding, gitFinding, harnessesOf, Preflight } from "../../preflight";
import { Plugins } from "../../proxy";
import { LazyError } from "../../util/errors";
import * as Log from "../../util/log";
import { findProjectRoot, lazyHome } from "../../util/paths";
import * as Client from "../client";
import { command, jsonArg, print, printJson } from "../command";
import { networkFindings, upstreamWayFindings } from "../doctor-network";
import { type AuthAnswer, defaultCredentialFinding } from "./doctor-truths";

async function findings(root: string): Promise<Finding[]> {
  const out: Finding[] = [];
  const loaded = load(root);
  if (loaded.ok)
    out.push({ check: "config", ok: true, blocking: false, summary: loaded.present ? "lazy.toml loads" : "no lazy.toml: using defaults" });
  else
    out.push({
      check: "config",
      ok: false,
      blocking: true,
      summary: `lazy.toml has ${loaded.problems.length} problem${loaded.problems.length === 1 ? "" : "s"}`,
      remedy: "fix the lines below; the daemon will not start until it loads",
      details: loaded.problems.map(formatProblem),
    });

  const trusted = loaded.ok ? trustFinding(root) : undefined;
  if (trusted) out.push(trusted);
  out.push(...secretFindings(root));

  // Before connecting: starting the daemon clears the keeper's record of why it gave up.
  const crashed = crashFinding(root);
  if (crashed) out.push(crashed);

  // The launch's own checks (src/preflight): one place for what a launch needs.
  out.push(Words.shownFinding(gitFinding(root)));

  // Doctor looks, it never starts a daemon: a stopped one is said to be stopped.
  let status: DaemonStatus | undefined;
  let client: Client.Client | undefined;
  if (loaded.ok && (!trusted || trusted.ok)) {
    try {
      client = await Client.running(root);
      if (!client)
        out.push({
          check: "daemon",
          ok: true,
          blocking: false,
          summary: "not running: the next launch (lazy run, lazy task add) or lazy daemon start starts it",
        });
      else status = await client.request<DaemonStatus>("GET", "/api/status");
    } catch (e) {
      out.push({
        check: "daemon",
        ok: false,
        blocking: true,
        summary: `cannot reach the daemon: ${(e as Error).message}`,
        remedy: "see lazy daemon logs",
      });
    }
    if (status) {
      out.push({
        check: "daemon",
        ok: true,
        blocking: false,
        summary: `running (pid ${status.pid}, version ${status.version}) at ${status.api.url}`,
      });
      if (status.config.state === "broken")
        out.push({
          check: "config",
          ok: false,
          blocking: true,
          summary: "the daemon is serving the last good config",
          remedy: "fix lazy.toml",
          details: status.config.problems,
        });
    }
  }

  if (status) {
    const p = status.proxy;
    let answered = false;
    if (p.url)
      answered = await fetch(p.url + "/", { method: "HEAD", signal: AbortSignal.timeout(2000), proxy: false }).then(
        () => true,
        () => false,
      );
    if (p.state === "ready" && answered) out.push({ check: "proxy", ok: true, blocking: false, summary: `listening on ${p.url}` });
    else
      out.push({
        check: "proxy",
        ok: false,
        blocking: true,
        summary: p.state === "ready" ? `the proxy at ${p.url} does not answer` : `the proxy is ${p.state}${p.error ? `: ${p.error}` : ""}`,
        remedy: "free the [proxy] port or change it in lazy.toml, then lazy daemon restart",
      });
  }

  if (status && client) {
    try {
      const c = client;
      const auth = await c.request<
        {
          backend: string;
          note: string;
          problems: Record<string, string>;
          expiry?: { credential: string; expired: boolean; message: string }[];
          services?: ServiceStatus[];
        } & AuthAnswer
      >("GET", "/api/auth");
      out.push({ check: "secrets", ok: true, blocking: false, summary: `credential store: ${auth.backend} — ${auth.note}` });
      const cred = defaultCredentialFinding(auth);
      if (cred) out.push(cred);
      for (const [name, problem] of Object.entries(auth.problems))
        out.push({ check: "secrets", ok: false, blocking: true, summary: problem, remedy: `lazy auth set ${name}` });
      // An OAuth token that lapses within a day warns; one that has lapsed blocks (its requests fail).
      for (const e of auth.expiry ?? [])
        if (!auth.problems[e.credential])
          out.push({ check: "secrets", ok: false, blocking: e.expired, summary: e.message, remedy: `lazy auth set ${e.credential}` });
      if (loaded.ok) out.push(...serviceFindings(auth.services ?? [], auth.credentials ?? [], loaded.config.container.network));
    } catch (e) {
      out.push({ check: "secrets", ok: false, blocking: false, summary: `cannot read the credential store: ${(e as Error).message}` });
    }
  }

  if (loaded.ok) out.push(...(await pluginFindings(loaded.config.proxy.plugins, root)));
  if (loaded.ok) out.push(...upstreamWayFindings(loaded.config));

  if (loaded.ok && loaded.config.notify.desktop) {
    const tool = desktopTool();
    out.push(
      tool
        ? { check: "notify", ok: true, blocking: false, summary: `desktop notifications through ${tool.path}` }
        : {
            check: "notify",
            ok: false,
            blocking: false,
            summary: "desktop = true but neither notify-send nor osascript is on PATH",
            remedy: "install notify-send (Debian/Ubuntu: apt install libnotify-bin), or set desktop = false in [notify]",
          },
    );
  }

  const ep = Engine.resolve();
  const ping = await Engine.ping(ep);
  const checked = engineFinding(status?.docker ?? Client.recordOf(root)?.docker, ep);
  const engines = checked && Words.shownFinding(checked);
  if (ping.ok) {
    out.push({ check: "docker", ok: true, blocking: false, summary: `engine ${ping.version} (${ping.os}) at ${ep.host} (${ep.source})` });
    if (Engine.isSsh(ep))
      out.push({
        check: "docker",
        ok: true,
        blocking: false,
        summary: `${ep.host} is reached through an ssh tunnel lazy holds (the system's OpenSSH, host key checked strictly)`,
      });
    if (engines) out.push(engines);
    const k = await Engine.kind(ep).catch(() => undefined);
    if (k?.kind === "native")
      out.push({
        check: "docker",
        ok: true,
        blocking: false,
        summary: `native Linux Docker (${k.detail}): each task's placeholder is pinned to its container's address`,
      });
    else if (k)
      out.push({
        check: "docker",
        ok: false,
        blocking: false,
        summary: `${k.kind === "desktop" ? "Docker Desktop" : k.kind === "rootless" ? "rootless Docker" : "a remote Docker engine"} (${k.detail}): placeholders are not pinned to their containers`,
        remedy:
          k.kind === "remote"
            ? "a placeholder is still revoked when its task ends; pinning needs native Linux Docker"
            : "a placeholder is still revoked when its task ends; pinning needs native Linux Docker. Containers here reach the proxy from this machine's loopback, as host sessions do: keep lazy chat, pair and build sessions' keys out of task worktrees",
      });
    if (k?.kind === "remote" && loaded.ok) {
      // The launch's own rule (containers/project.ts bindFor), so doctor passes only what a launch takes.
      let refused: string | undefined;
      let bind = "";
      try {
        bind = bindFor(ep, loaded.config);
      } catch (e) {
        refused = (e as Error).message;
      }
      out.push(
        refused === undefined
          ? {
              check: "docker",
              ok: true,
              blocking: false,
              summary: `containers on ${ep.host} reach the proxy at ${bind} ([proxy] remote_bind); the worktree is shipped there and commits brought back`,
            }
          : {
              check: "docker",
              ok: false,
              blocking: true,
              summary: loaded.config.proxy.remote_bind
                ? refused
                : `${ep.host} is a remote engine and [proxy] remote_bind is not set: its containers cannot reach lazy's proxy`,
              remedy: "set [proxy] remote_bind to an address of this host that engine routes to (then lazy trust), or unset DOCKER_HOST",
            },
      );
    }
    if (k) out.push(metadataFinding(k.kind, status, loaded.ok ? loaded.config.container.allow_metadata : undefined));
    if (k) out.push(fenceFinding(status, loaded.ok ? loaded.config.container.network : undefined));
    if (k?.kind === "native") out.push(...sharedFinding(status));
  } else if (Engine.isSsh(ep))
    // The tunnel's refusal is already cause and remedy (containers/ssh-tunnel.ts).
    out.push({
      check: "docker",
      ok: false,
      blocking: true,
      summary: `cannot reach the Docker engine at ${ep.host} (${ep.source}) over SSH`,
      remedy: ping.error,
    });
  else
    out.push({
      check: "docker",
      ok: false,
      blocking: true,
      summary: `cannot reach the Docker engine at ${ep.host} (${ep.source}): ${ping.error}`,
      remedy: Engine.isRemote(ep)
        ? "start that engine or fix DOCKER_HOST, or unset DOCKER_HOST to use this machine's engine"
        : "start Docker (Linux: sudo systemctl start docker, or dockerd), or point DOCKER_HOST at a running engine",
    });
  if (!ping.ok && engines) out.push(engines);
  // (c) and (d) of the preflight, on this shell's engine: the image, and each profile's harness in it.
  // Only under a trusted lazy.toml: the harness check runs the image the file names, and an
  // untrusted file runs nothing (the trust finding above says what to do).
  if (loaded.ok && ping.ok && (!trusted || trusted.ok)) out.push(...(await imageFindings(root, loaded.config, ep)));
  if (loaded.ok) out.push(...(await networkFindings(root, loaded.config, ping.ok ? ep : null)));
  if (loaded.ok) out.push(buildNetworkFinding(loaded.config.container.build_network, loaded.config.container.network));
  return out;
}

/**
 * The task image and the harness of the default profile and of each profile lazy.toml defines,
 * checked as a launch checks them (src/preflight), on this shell's engine; a named image that is
 * missing is said, not pulled.
 */
async function imageFindings(root: string, config: Config, ep: Engine.Endpoint): Promise<Finding[]> {
  const runtime = Runtime.connect(Log.create("doctor"), ep);
  runtime.catch(() => {});
  const pre = new Preflight({ root, stateDir: State.paths(root).dir, docker: () => runtime, endpoint: () => ep });
  let harnesses: ReturnType<typeof harnessesOf>;
  try {
    harnesses = harnessesOf(config, [defaultProfile(config), ...Object.keys(config.profiles)]);
  } catch (e) {
    return [{ check: "harness", ok: false, blocking: true, summary: (e as Error).message }];
  }
  return (await pre.image(config, harnesses, { pull: false })).map(Words.shownFinding);
}

/**
 * Each request plugin, loaded or refused and why, by the daemon's own rules (proxy/plugins): a
 * refused one fails every model request until it is fixed, so it blocks.
 */
async function pluginFindings(plugins: Parameters<typeof Plugins.resolve>[0], root: string): Promise<Finding[]> {
  const loaded = Plugins.problems(await Plugins.load(Plugins.resolve(plugins, lazyHome(), root)));
  return loaded.map((p) =>
    p.refused
      ? {
          check: "plugins",
          ok: false,
          blocking: true,
          summary: `request plugin ${p.name} is refused: ${p.refused}`,
          remedy: `every model request fails until it loads: install it under ${Plugins.folder(lazyHome())} and name that path in [[proxy.plugins]], or remove the entry`,
        }
      : { check: "plugins", ok: true, blocking: false, summary: `request plugin ${p.name} is loaded` },
  );
}

/** Whether this project's lazy.toml is trusted (config/trust.ts): path, hash, when; or what is not. */
/** The daemon's crashes in the last minute, or the keeper giving up on them (daemon/keeper.ts). */
function crashFinding(root: string): Finding | undefined {
  const c = Keeper.readCrashes(State.paths(root));
  const gaveUp = Keeper.gaveUpLine(c);
  if (gaveUp)
    return {
      check: "daemon",
      ok: false,
      blocking: false,
      summary: `the daemon had stopped: ${gaveUp}`,
      remedy: "read why in lazy daemon logs (the lines before the keeper's); lazy daemon start (or the next launch) starts it again",
    };
  const recent = (c?.recent ?? []).filter((x) => Date.now() - Date.parse(x.at) < Keeper.WINDOW_MS);
  if (!recent.length) return undefined;
  return {
    check: "daemon",
    ok: false,
    blocking: false,
    summary: `the daemon crashed ${recent.length} time${recent.length === 1 ? "" : "s"} in the last minute and was restarted; last exit: ${recent.at(-1)!.exit}`,
    remedy: "see lazy daemon logs for why (signal SIGKILL with no lazy line before it is often the OOM killer: dmesg says)",
  };
}

function trustFinding(root: string): Finding | undefined {
  let c: Trust.Checked;
  try {
    c = Trust.check(root);
  } catch (e) {
    return { check: "trust", ok: false, blocking: true, summary: (e as Error).message };
  }
  if (c.ok && !c.present) return undefined;
  if (c.ok)
    return c.record
      ? {
          check: "trust",
          ok: true,
          blocking: false,
          summary: `${c.file} trusted (sha256:${c.record.sha256.slice(0, 12)}, ${c.record.trustedAt})`,
        }
      : { check: "trust", ok: true, blocking: false, summary: `${c.file} sets no key that needs trust` };
  return {
    check: "trust",
    ok: false,
    blocking: true,
    summary: c.error.message,
    remedy: `look at ${c.file}, then run lazy trust in ${root}`,
    details: c.error.details,
  };
}

/** URLs in lazy.toml with a token in them: every task container can read the file. Names the key and place, never the value. */
function secretFindings(root: string): Finding[] {
  const file = join(root, FILE);
  if (!existsSync(file)) return [];
  const read = readConfigText(file);
  if (!("text" in read)) return []; // said by the config check already
  return secretUrls(read.text).map((u) => ({
    check: "secrets",
    ok: false,
    blocking: false,
    summary: `${FILE}:${u.line}:${u.col} ${u.path} holds a URL with a secret in it (${u.part}); every task container can read ${FILE}`,
    remedy:
      u.path === "notify.webhook"
        ? 'store the URL as a credential (lazy auth set slack-hook, the URL on stdin) and write webhook_credential = "slack-hook" in [notify] instead'
        : "move the secret out of the URL (a stored credential: lazy auth set NAME)",
  }));
}

/** A finding that never blocks a launch: all is well, or a warning with its remedy. */
const fine = (check: string, summary: string): Finding => ({ check, ok: true, blocking: false, summary });
const warn = (check: string, summary: string, remedy: string | undefined): Finding => ({
  check,
  ok: false,
  blocking: false,
  summary,
  remedy,
});

/**
 * Whether task containers can reach link-local metadata addresses (169.254.169.254 hands out a
 * cloud VM's own credentials). The daemon knows once it has set up a task network; before
 * that, only what the engine's kind rules out can be said.
 */
function metadataFinding(kind: string, status: DaemonStatus | undefined, allow: boolean | undefined): Finding {
  const g = status?.metadata;
  if (g?.state === "blocked")
    return fine(
      "network",
      `task containers cannot reach link-local metadata addresses (169.254.0.0/16, fe80::/10, fd00:ec2::254): firewall rules on ${g.bridge}`,
    );
  if (g?.state === "allowed" || (!g && allow))
    return warn(
      "network",
      "[container] allow_metadata = true: task containers can reach link-local metadata addresses such as 169.254.169.254",
      "remove allow_metadata from lazy.toml unless a task needs the metadata service",
    );
  if (g?.state === "unblocked")
    return warn("network", `link-local metadata addresses are not blocked for task containers: ${g.reason}`, g.remedy);
  if (kind !== "native")
    return warn(
      "network",
      `${kind === "desktop" ? "Docker Desktop" : kind === "rootless" ? "rootless Docker" : "a remote Docker engine"} runs containers where lazy cannot set the firewall: task containers may reach 169.254.169.254`,
      "block link-local metadata addresses in that engine's VM or host firewall, or use native Linux Docker",
    );
  return fine("network", "link-local metadata addresses are blocked when a task's network is set up (none yet)");
}

/** What else task containers can reach: `[container] network` as the daemon last set it (network/fence.ts). */
function fenceFinding(status: DaemonStatus | undefined, mode: string | undefined): Finding {
  const f = status?.fence;
  if (f?.state === "fenced")
    return fine(
      "fence",
      `network = "${f.mode}": task containers reach only lazy's proxy and MCP${f.mode === "none" ? "" : " and its egress proxy"} (gateway ports ${f.ports.join(", ")}; firewall rules on ${f.bridge})`,
    );
  if (f?.state === "open" || (!f && mode === "open"))
    return warn(
      "fence",
      'network = "open": task containers reach any address, host services and other projects\' listeners included',
      'set [container] network = "allowlist" (the default) and list the hosts tasks need in allow',
    );
  if (f?.state === "unfenced") return warn("fence", `the network fence is not set: ${f.reason}`, f.remedy);
  return fine("fence", "the network fence is set when a task's network is set up (none yet)");
}

/**
 * Where image builds run (containers/project.ts buildNetwork): a RUN line, or a script of the
 * build context it runs, is code from the checkout run as root in the build.
 */
function buildNetworkFinding(where: "project" | "host", mode: string): Finding {
  if (where === "host")
    return warn(
      "build",
      "[container] build_network = \"host\": image builds run on the host's network, so a RUN line (or a script of the build context it runs) reaches this host's loopback services and whatever the host reaches",
      "remove build_network from lazy.toml unless a build needs something only the host reaches; builds on the project's network go through lazy's egress proxy, which chains to the host's HTTP(S)_PROXY",
    );
  return fine(
    "build",
    mode === "open"
      ? 'image builds run on the project\'s network, which network = "open" leaves unfenced'
      : `image builds run on the project's network, fenced like task containers (network = "${mode}")`,
  );
}

/**
 * Whether the project's bridge shares its addresses with another interface of this host (its
 * containers' connections to lazy's proxy then hang: network/subnets.ts sharedWith). Said
 * only once the daemon has set up a network.
 */
function sharedFinding(status: DaemonStatus | undefined): Finding[] {
  const bridge =
    status?.fence && "bridge" in status.fence
      ? status.fence.bridge
      : status?.metadata && "bridge" in status.metadata
        ? status.metadata.bridge
        : undefined;
  if (!bridge) return [];
  const shared = Subnets.sharedWith(bridge);
  if (!shared.length)
    return [fine("subnet", `the project's network (${bridge}) shares its addresses with no other interface of this host`)];
  return [
    {
      check: "subnet",
      ok: false,
      blocking: true,
      summary: `the project's network (${bridge}) shares its addresses with ${shared.join(", ")}: this host answers its containers out of the other interface, so their connections to lazy's proxy hang (an MCP server that does not connect, model calls that time out)`,
      remedy:
        "stop the project's tasks, then lazy daemon stop and start again: lazy makes its network anew on a block no interface of this host holds",
    },
  ];
}

export const doctor = command({
  meta: { name: "doctor", description: "Check config, daemon, proxy and Docker, each with its remedy" },
  args: jsonArg,
  async run({ args }) {
    const list = await findings(findProjectRoot());
    const blocking = list.filter((f) => !f.ok && f.blocking);
    if (args.json) printJson({ ok: blocking.length === 0, findings: list });
    else
      for (const f of list) {
        print(`${f.ok ? "ok  " : f.blocking ? "FAIL" : "warn"}  ${f.check.padEnd(8)} ${f.summary}`);
        for (const d of f.details ?? []) print(`              ${d}`);
        if (!f.ok && f.remedy) print(`              → ${f.remedy}`);
      }
    if (blocking.length)
      throw new LazyError(
        "launch_refused",
        `lazy doctor found ${blocking.length} blocking problem${blocking.length === 1 ? "" : "s"} (${blocking.map((b) => b.check).join(", ")}).`,
      );
  },
});

type ServiceStatus = {
  name: string;
  hosts: string[];
  source: string;
  push: boolean;
  last: { ok: boolean; detail: string; at: number } | null;
};

/**
 * Each brokered service ([[service]]): its hosts, where its token comes from and whether it
 * last came; a stored credential that is missing, a source that failed last, or a network mode
 * the broker cannot work under, each with its remedy.
 */
export function serviceFindings(services: ServiceStatus[], stored: { name: string }[], network: string): Finding[] {
  const out: Finding[] = [];
  for (const s of services) {
    const what = `service ${s.name}: ${s.hosts.join(", ")} brokered, token from ${s.source}${s.push ? ", pushes to lazy/<task> allowed" : ""}`;
    const cred = /^credential (.+)$/.exec(s.source)?.[1] ?? /^GitHub App \S+ key (.+)$/.exec(s.source)?.[1];
    if (cred && !stored.some((c) => c.name === cred))
      out.push({
        check: "services",
        ok: false,
        blocking: true,
        summary: `${what}; credential ${cred} is not stored`,
        remedy: `lazy auth set ${cred}`,
      });
    else if (s.last && !s.last.ok)
      out.push({
        check: "services",
        ok: false,
        blocking: false,
        summary: `${what}; last try failed: ${s.last.detail}`,
        remedy: "fix the source (see the message), then the next request tries again",
      });
    else out.push({ check: "services", ok: true, blocking: false, summary: s.last ? `${what}; last token ${s.last.detail}` : what });
  }
  if (services.length && network !== "allowlist" && network !== "observe")
    out.push({
      check: "services",
      ok: false,
      blocking: false,
      summary: `[container] network = "${network}": brokered services work only through lazy's egress proxy`,
      remedy: 'set [container] network = "allowlist" (the default) or "observe", then lazy trust',
    });
  return out;
}
