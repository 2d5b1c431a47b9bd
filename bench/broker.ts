/**
 * Issue 36's figures: the broker (src/broker) against going direct, in one run, rounds
 * interleaved, each figure the median of its rounds. Three real servers on the host's loopback,
 * each with a CA of its own: the git host (test/helpers/git-https.ts: nginx + git http-backend
 * over HTTPS, basic auth) holding a repository of ~100 MB of random (incompressible) blobs,
 * packed; verdaccio (test/helpers/verdaccio.ts) with 50 small packages @acme/pkg-0…49 published
 * by the bench; and a small HTTPS API (Bun.serve in its own process) that answers 200 only to
 * the real token. Each is a `[[service]]` of the project; the daemon reaches them by name
 * through LAZY_RESOLVE and trusts their CAs through NODE_EXTRA_CA_CERTS.
 *
 * Through the broker: the commands run inside the task's own container (`docker exec`) while
 * its turn runs (real Claude Code, held in a `sleep` by the mock provider), so the broker sees
 * the caller it serves: the container's address pinned to a running turn's grant. git and npm
 * use what lazy gave the container (the credential helper, the npmrc, placeholders only, the
 * egress proxy as HTTPS_PROXY). The time is taken inside the container, around the command.
 *
 * Direct: the container of the task cannot reach the servers without lazy (the fence), so the
 * baselines are
 *  - the same image's tools in a container on the host's network (`--network host`): same git,
 *    same npm and node, same overlay disk, the servers at 127.0.0.1 with the real token (the
 *    target's baseline: only the path differs);
 *  - the host's own git and npm (other versions: Debian's node 20/npm 11 here against the
 *    image's node 18/npm 9; printed for reference).
 *
 * Figures (targets from issue 36):
 *  1. git clone of the ~100 MB repository: broker ≥ 0.7× direct (rate).
 *  2. npm install of the 50 packages, cache and node_modules fresh each round: ≤ 1.2× direct (time).
 *  3. per-request time of 200 small GETs on one kept-alive TLS connection (node, tls over a
 *     raw socket): through the broker (CONNECT to the brokered name, TLS ends at lazy's
 *     terminator, the placeholder swapped, fetch to the server) vs a plain CONNECT tunnel
 *     through the same egress proxy (to 127.0.0.1:PORT, allowed in [container] allow; TLS end
 *     to end) vs direct (host network). Target: broker p50 − tunnel p50 ≤ 2 ms.
 *
 * Run: bun run build && bun bench/broker.ts [rounds]   (root for the fence, Docker, the test
 * images, nginx-light + fcgiwrap and verdaccio from scripts/setup-test-env.sh)
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { startGitHost } from "../test/helpers/git-https";
import { freePort, serverTls } from "../test/helpers/local-servers";
import * as Mock from "../test/helpers/providers";
import { npmEnv, startRegistry } from "../test/helpers/verdaccio";
import { containerProject, pct, trustToml } from "./lib";

const BIN = process.env.LAZY_BENCH_BIN ?? resolve(import.meta.dir, "../dist/lazy");
const rounds = Number(process.argv[2] ?? 5);
const BASE = process.env.LAZY_BENCH_BASE ?? "lazy-test/node:bookworm";
const FILES = 25;
const FILE_BYTES = 4 * 1024 * 1024; // 25 × 4 MiB = 100 MiB of random bytes
const PACKAGES = 50;
const REQUESTS = 200;
const BASE62 = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
const rand = (n: number) => Array.from(crypto.getRandomValues(new Uint8Array(n)), (b) => BASE62[b % 62]).join("");
const GIT_TOKEN = `ghp_${rand(36)}`;
const API_TOKEN = `api-${rand(40)}`;

const scratch = mkdtempSync(join(tmpdir(), "lazy-bench-broker-"));
const run = (cmd: string[], opts: { cwd?: string; env?: Record<string, string>; stdin?: string } = {}) => {
  const r = Bun.spawnSync(cmd, {
    cwd: opts.cwd,
    env: opts.env ?? (process.env as Record<string, string>),
    stdin: opts.stdin === undefined ? "ignore" : new Blob([opts.stdin]),
    stdout: "pipe",
    stderr: "pipe",
  });
  if (r.exitCode !== 0) throw new Error(`${cmd.join(" ")}: ${r.stderr.toString()}${r.stdout.toString()}`);
  return r.stdout.toString();
};

// --- the servers -------------------------------------------------------------------------

const host = await startGitHost({ token: GIT_TOKEN, repos: { "owner/big": { files: { "README.md": "big\n" } } } });
{
  // 100 MiB of random blobs on main, packed on the server (upload-pack reuses the pack).
  const work = join(scratch, "big");
  const genv = { ...(process.env as Record<string, string>), GIT_CONFIG_NOSYSTEM: "1" };
  run(["git", "clone", "-q", host.path("owner/big"), work], { env: genv });
  for (let i = 0; i < FILES; i++) writeFileSync(join(work, `blob-${i}.bin`), crypto.getRandomValues(new Uint8Array(FILE_BYTES)));
  run(["git", "add", "-A"], { cwd: work, env: genv });
  run(["git", "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "100 MB of random blobs"], { cwd: work, env: genv });
  run(["git", "push", "-q", "origin", "main"], { cwd: work, env: genv });
  run(["git", "repack", "-a", "-d", "-q"], { cwd: host.path("owner/big"), env: genv });
  rmSync(work, { recursive: true, force: true });
}
const packBytes = Number(run(["du", "-sb", join(host.path("owner/big"), "objects")]).split("\t")[0]);

const registry = await startRegistry();
{
  // 50 small packages under @acme, published with real npm by the registry's user (5 at a time).
  const rc = registry.npmrc({ token: registry.token, direct: true });
  const home = join(scratch, "npm-home");
  mkdirSync(home);
  const publish = async (i: number) => {
    const dir = join(scratch, "pkgs", `pkg-${i}`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      join(dir, "package.json"),
      JSON.stringify({ name: `@acme/pkg-${i}`, version: "1.0.0", main: "index.js", license: "UNLICENSED" }),
    );
    writeFileSync(join(dir, "index.js"), `module.exports = ${JSON.stringify(`pkg ${i} ${rand(200)}`)};\n`);
    const p = Bun.spawn(["npm", "publish", "--access", "restricted"], { cwd: dir, env: npmEnv(rc, home), stdout: "pipe", stderr: "pipe" });
    if ((await p.exited) !== 0) throw new Error(`npm publish @acme/pkg-${i}: ${await new Response(p.stderr).text()}`);
  };
  const todo = Array.from({ length: PACKAGES }, (_, i) => i);
  await Promise.all(
    Array.from({ length: 5 }, async () => {
      for (let i = todo.shift(); i !== undefined; i = todo.shift()) await publish(i);
    }),
  );
}

// The API: its own process, one small JSON answer, 200 only to the real token.
const apiTls = serverTls(mkdtempSync(join(scratch, "api-")), "api.lazy.test");
const apiPort = freePort();
const api = Bun.spawn(
  [
    process.execPath,
    "-e",
    `const want = "Basic " + btoa("bench:${API_TOKEN}");
const body = JSON.stringify({ ok: true, items: [1, 2, 3], note: "x".repeat(200) });
Bun.serve({ hostname: "127.0.0.1", port: ${apiPort}, tls: { cert: Bun.file(${JSON.stringify(apiTls.certFile)}), key: Bun.file(${JSON.stringify(apiTls.keyFile)}) },
  fetch: (req) => req.headers.get("authorization") === want ? new Response(body, { headers: { "content-type": "application/json" } }) : new Response("no\\n", { status: 401 }) });
console.log("up");`,
  ],
  { stdout: "pipe", stderr: "inherit" },
);
{
  const reader = api.stdout.getReader();
  await reader.read();
  reader.releaseLock();
}

// One file with the three CAs: the daemon's NODE_EXTRA_CA_CERTS, and the direct clients'.
const caAll = join(scratch, "cas.pem");
writeFileSync(caAll, [host.caPem, registry.caPem, apiTls.caPem].join("\n"));

// --- the project, its services, a task whose turn holds its container up ---------------------

const upstream = await Mock.anthropic();
upstream.reply = { text: "done.", toolUse: { name: "Bash", input: { command: "sleep 590", description: "hold", timeout: 600_000 } } };
const {
  root,
  env: projectEnv,
  sh,
  dispose,
} = containerProject(BIN, "broker", BASE, upstream.url, {
  LAZY_RESOLVE: `${host.name}=127.0.0.1,${registry.name}=127.0.0.1,api.lazy.test=127.0.0.1`,
  NODE_EXTRA_CA_CERTS: caAll,
});
let directBox = "";

/** A shell command in a container, timed inside it (ms), its output checked by `ok`. */
async function timedIn(box: string, user: string, script: string, env: string[] = []): Promise<number> {
  const cmd = `t0=$(date +%s%N); ( ${script} ) >/tmp/bench.out 2>&1; rc=$?; t1=$(date +%s%N); if [ $rc -ne 0 ]; then cat /tmp/bench.out; echo "exit $rc"; exit 1; fi; echo $(( (t1 - t0) / 1000 ))`;
  const p = Bun.spawn(["docker", "exec", "-u", user, ...env.flatMap((e) => ["-e", e]), box, "sh", "-c", cmd], {
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  const us = Number(out.trim());
  if (p.exitCode !== 0 || !out.trim() || !Number.isFinite(us)) throw new Error(`in ${box.slice(0, 12)}: ${script}\n${out}${err}`);
  return us / 1000;
}

/** The request loop: one connection (direct or by CONNECT), TLS, `n` GETs kept alive; per-request ms. */
const LOOP = `const net = require("node:net"), tls = require("node:tls"), fs = require("node:fs");
const [dialHost, dialPort, target, name, auth, n] = process.argv.slice(2);
const ca = (process.env.BENCH_CA || "").split(":").filter((f) => f && fs.existsSync(f)).map((f) => fs.readFileSync(f));
const isIp = /^[0-9.]+$/.test(name.split(":")[0]);
const fail = (m) => { console.error(m); process.exit(1); };
const raw = net.connect({ host: dialHost, port: Number(dialPort) }, () => {
  if (target === "-") return secure();
  raw.write("CONNECT " + target + " HTTP/1.1\\r\\nHost: " + target + "\\r\\n\\r\\n");
  let head = "";
  const on = (d) => { head += d.toString("latin1"); if (!head.includes("\\r\\n\\r\\n")) return; raw.off("data", on);
    if (!/^HTTP\\/1\\.[01] 200/.test(head)) fail("CONNECT: " + head.split("\\r\\n")[0]); secure(); };
  raw.on("data", on);
});
raw.on("error", (e) => fail("socket: " + e.message));
function secure() {
  const host = name.split(":")[0];
  const s = tls.connect({ socket: raw, host, servername: isIp ? undefined : host, ca: ca.length ? [...tls.rootCertificates, ...ca] : undefined }, () => loop(s));
  s.on("error", (e) => fail("tls: " + e.message));
}
function loop(s) {
  const times = []; let buf = Buffer.alloc(0), t0 = 0, i = 0; const total = Number(n) + 20;
  const req = "GET /v1/items HTTP/1.1\\r\\nHost: " + name + "\\r\\nAuthorization: " + auth + "\\r\\nAccept: application/json\\r\\n\\r\\n";
  const send = () => { t0 = performance.now(); s.write(req); };
  s.on("data", (d) => {
    buf = buf.length ? Buffer.concat([buf, d]) : d;
    const end = buf.indexOf("\\r\\n\\r\\n"); if (end < 0) return;
    const head = buf.subarray(0, end).toString("latin1");
    const len = Number((/content-length: *(\\d+)/i.exec(head) || [])[1]);
    if (!Number.isFinite(len)) fail("no content-length: " + head);
    if (buf.length < end + 4 + len) return;
    if (!head.startsWith("HTTP/1.1 200")) fail("answer: " + head.split("\\r\\n")[0] + " " + buf.subarray(end + 4, end + 4 + len));
    buf = buf.subarray(end + 4 + len);
    if (i++ >= 20) times.push(performance.now() - t0);
    if (i < total) send(); else { console.log(JSON.stringify(times)); s.end(); process.exit(0); }
  });
  send();
}`;

async function loopIn(box: string, args: string[], ca: string): Promise<number[]> {
  const p = Bun.spawn(["docker", "exec", "-u", "1000", "-e", `BENCH_CA=${ca}`, box, "node", "/tmp/bench-loop.cjs", ...args], {
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  if (p.exitCode !== 0 || !out.trim()) throw new Error(`the request loop in ${box.slice(0, 12)} said: ${out}${err}`);
  return JSON.parse(out) as number[];
}

try {
  writeFileSync(
    join(root, "lazy.toml"),
    [
      "[container]",
      `base = "${BASE}"`,
      `allow = ["127.0.0.1:${apiPort}", "127.0.0.1:${host.port}", "127.0.0.1:${registry.port}"]`,
      "",
      "[proxy.upstreams]",
      `anthropic = "${upstream.url}"`,
      "",
      "[[service]]",
      'shape = "github"',
      `hosts = ["${host.name}:${host.port}"]`,
      `url = "https://${host.name}:${host.port}"`,
      'credential = "githost"',
      'repos = ["owner/big"]',
      "",
      "[[service]]",
      'shape = "npm"',
      `hosts = ["${registry.name}:${registry.port}"]`,
      `url = "${registry.url}"`,
      'credential = "npmreg"',
      'scopes = ["@acme"]',
      "",
      "[[service]]",
      'shape = "custom"',
      'name = "api"',
      `hosts = ["api.lazy.test:${apiPort}"]`,
      `url = "https://api.lazy.test:${apiPort}"`,
      'auth = "basic"',
      'user = "bench"',
      'credential = "apitoken"',
      "",
    ].join("\n"),
  );
  trustToml(BIN, root, projectEnv);
  for (const [name, value] of [
    ["githost", GIT_TOKEN],
    ["npmreg", registry.token],
    ["apitoken", API_TOKEN],
  ] as const)
    run([BIN, "auth", "set", name], { cwd: root, env: projectEnv, stdin: value });

  sh([BIN, "task", "add", "hold", "--code", "hold"]);
  sh([BIN, "start", "hold"]);
  let box = "";
  for (const deadline = Date.now() + 240_000; !box && Date.now() < deadline; await Bun.sleep(500))
    if (upstream.received.some((r) => r.method === "POST"))
      box = sh(["docker", "ps", "-q", "--filter", `label=dev.lazy.root=${root}`])
        .trim()
        .split("\n")[0]!;
  if (!box) throw new Error("the task's turn did not start within 240 s");
  const inspect = JSON.parse(sh(["docker", "inspect", box]))[0];
  const env = inspect.Config.Env as string[];
  const proxy = new URL(env.find((e) => e.startsWith("HTTPS_PROXY="))!.slice("HTTPS_PROXY=".length));
  const apiUser = env.find((e) => e.startsWith("LAZY_BROKER_API="))?.slice("LAZY_BROKER_API=".length);
  if (!apiUser)
    throw new Error(`the task's container has no LAZY_BROKER_API placeholder: ${env.filter((e) => e.startsWith("LAZY_")).join(" ")}`);

  // The baseline container: same image, the host's network, the CAs and the servers at 127.0.0.1.
  directBox = sh([
    "docker",
    "run",
    "-d",
    "--rm",
    "--network",
    "host",
    "-v",
    `${caAll}:/bench/cas.pem:ro`,
    "--entrypoint",
    "sleep",
    inspect.Config.Image,
    "infinity",
  ]).trim();
  writeFileSync(join(scratch, "bench-loop.cjs"), LOOP);
  writeFileSync(join(scratch, "api-ca.pem"), apiTls.caPem);
  writeFileSync(
    join(scratch, "tunnel.npmrc"),
    `@acme:registry=${registry.directUrl}\n${registry.directUrl.replace(/^https:/, "")}:_authToken=${registry.token}\ncafile=/tmp/cas.pem\n`,
  );
  writeFileSync(join(scratch, "cas.pem"), [host.caPem, registry.caPem, apiTls.caPem].join("\n"));
  const pkgJson = JSON.stringify({
    name: "bench-install",
    version: "1.0.0",
    private: true,
    dependencies: Object.fromEntries(Array.from({ length: PACKAGES }, (_, i) => [`@acme/pkg-${i}`, "1.0.0"])),
  });
  writeFileSync(join(scratch, "package.json"), pkgJson);
  writeFileSync(
    join(scratch, "direct.npmrc"),
    `@acme:registry=${registry.directUrl}\n${registry.directUrl.replace(/^https:/, "")}:_authToken=${registry.token}\ncafile=/bench/cas.pem\n`,
  );
  for (const b of [box, directBox])
    for (const f of ["bench-loop.cjs", "package.json", "direct.npmrc", "tunnel.npmrc", "api-ca.pem", "cas.pem"])
      sh(["docker", "cp", join(scratch, f), `${b}:/tmp/${f}`]);

  // The clients. A tunnel client goes through the egress proxy (HTTPS_PROXY) to 127.0.0.1 too.
  const NOT_BROKERED = ["NO_PROXY=", "no_proxy="];
  const brokerUrl = host.url("owner/big");
  const directUrl = `https://x-access-token:${GIT_TOKEN}@127.0.0.1:${host.port}/owner/big.git`;
  let n = 0;
  const cloneScript = (url: string) => {
    const d = `/tmp/clone-${n++}`;
    return `git clone -q ${url} ${d} && test $(ls ${d}/blob-*.bin | wc -l) = ${FILES} && rm -rf ${d}`;
  };
  const clone = {
    broker: () => timedIn(box, "1000", cloneScript(brokerUrl)),
    container: () => timedIn(directBox, "0", cloneScript(directUrl), ["GIT_SSL_CAINFO=/bench/cas.pem"]),
    // The task's container through the egress proxy to 127.0.0.1 (allowed), not brokered: the real token in the URL.
    tunnel: () => timedIn(box, "1000", cloneScript(directUrl), ["GIT_SSL_CAINFO=/tmp/cas.pem", ...NOT_BROKERED]),
    host: () => {
      const d = join(scratch, `clone-${n++}`);
      const t0 = performance.now();
      run(["git", "clone", "-q", directUrl, d], { env: { ...(process.env as Record<string, string>), GIT_SSL_CAINFO: caAll } });
      const ms = performance.now() - t0;
      rmSync(d, { recursive: true, force: true });
      return ms;
    },
  };
  const installScript = (npmrc: string) => {
    const d = `/tmp/install-${n++}`;
    return `mkdir ${d} && cp /tmp/package.json ${d}/ && cd ${d} && ${npmrc} npm install --cache ${d}-cache --no-audit --no-fund --loglevel=error && test $(ls node_modules/@acme | wc -l) = ${PACKAGES} && cd / && rm -rf ${d} ${d}-cache`;
  };
  const install = {
    broker: () => timedIn(box, "1000", installScript("")),
    container: () => timedIn(directBox, "0", installScript("NPM_CONFIG_USERCONFIG=/tmp/direct.npmrc")),
    tunnel: () => timedIn(box, "1000", installScript("NPM_CONFIG_USERCONFIG=/tmp/tunnel.npmrc"), NOT_BROKERED),
    host: () => {
      const d = join(scratch, `install-${n++}`);
      mkdirSync(d);
      writeFileSync(join(d, "package.json"), pkgJson);
      const rc = join(scratch, "host.npmrc");
      writeFileSync(
        rc,
        `@acme:registry=${registry.directUrl}\n${registry.directUrl.replace(/^https:/, "")}:_authToken=${registry.token}\ncafile=${caAll}\n`,
      );
      const t0 = performance.now();
      run(["npm", "install", "--cache", `${d}-cache`, "--no-audit", "--no-fund", "--loglevel=error"], {
        cwd: d,
        env: npmEnv(rc, join(scratch, "npm-home")),
      });
      const ms = performance.now() - t0;
      rmSync(d, { recursive: true, force: true });
      rmSync(`${d}-cache`, { recursive: true, force: true });
      return ms;
    },
  };
  const basic = (user: string, pw: string) => `Basic ${Buffer.from(`${user}:${pw}`).toString("base64")}`;
  const bundle = "/usr/local/share/lazy/host-ca.pem";
  const latency = {
    // CONNECT to the brokered name; TLS ends at lazy's terminator; the placeholder is swapped.
    broker: () =>
      loopIn(
        box,
        [proxy.hostname, proxy.port, `api.lazy.test:${apiPort}`, `api.lazy.test:${apiPort}`, basic("bench", apiUser), String(REQUESTS)],
        bundle,
      ),
    // CONNECT to 127.0.0.1:PORT (allowed): the egress proxy relays bytes, TLS end to end.
    tunnel: () =>
      loopIn(
        box,
        [proxy.hostname, proxy.port, `127.0.0.1:${apiPort}`, `127.0.0.1:${apiPort}`, basic("bench", API_TOKEN), String(REQUESTS)],
        "/tmp/api-ca.pem",
      ),
    direct: () =>
      loopIn(
        directBox,
        ["127.0.0.1", String(apiPort), "-", `127.0.0.1:${apiPort}`, basic("bench", API_TOKEN), String(REQUESTS)],
        "/tmp/api-ca.pem",
      ),
  };

  // Warm each path once (image caches, the broker's first secret read, TLS session setup).
  await clone.broker();
  await clone.container();
  clone.host();
  await install.broker();
  await install.container();
  await clone.tunnel();
  await install.tunnel();
  await latency.broker();
  await latency.tunnel();
  await latency.direct();

  const r = {
    clone: { broker: [] as number[], tunnel: [] as number[], container: [] as number[], host: [] as number[] },
    install: { broker: [] as number[], tunnel: [] as number[], container: [] as number[], host: [] as number[] },
    lat: { broker: [] as number[], tunnel: [] as number[], direct: [] as number[] },
    latP90: { broker: [] as number[], tunnel: [] as number[], direct: [] as number[] },
  };
  for (let i = 0; i < rounds; i++) {
    // Which path comes first alternates round by round.
    const order = <K extends string>(ks: K[]) => (i % 2 ? [...ks].reverse() : ks);
    for (const k of order(["broker", "tunnel", "container", "host"] as const)) r.clone[k].push(await clone[k]());
    for (const k of order(["broker", "tunnel", "container", "host"] as const)) r.install[k].push(await install[k]());
    for (const k of order(["broker", "tunnel", "direct"] as const)) {
      const ts = await latency[k]();
      r.lat[k].push(pct(ts, 50));
      r.latP90[k].push(pct(ts, 90));
    }
    console.error(`round ${i + 1}/${rounds} done`);
  }

  const m = (xs: number[]) => pct(xs, 50);
  const mb = packBytes / 1024 / 1024;
  const rate = (ms: number) => mb / (ms / 1000);
  const list = (xs: number[], f: (x: number) => string) => xs.map(f).join(" ");
  const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
  console.log(`broker bench: ${rounds} rounds, ${new Date().toISOString()}, dist/lazy at ${BIN}`);
  console.log(`1. git clone of ${mb.toFixed(0)} MiB (the server's pack), MiB/s (rate of each round in parentheses):`);
  console.log(
    `   direct, container on the host network   ${rate(m(r.clone.container)).toFixed(1)} MiB/s  ${s(m(r.clone.container))}  (${list(r.clone.container, (x) => rate(x).toFixed(0))})`,
  );
  console.log(
    `   broker, the task's container            ${rate(m(r.clone.broker)).toFixed(1)} MiB/s  ${s(m(r.clone.broker))}  (${list(r.clone.broker, (x) => rate(x).toFixed(0))})`,
  );
  console.log(
    `   plain CONNECT tunnel, task's container  ${rate(m(r.clone.tunnel)).toFixed(1)} MiB/s  ${s(m(r.clone.tunnel))}  (${list(r.clone.tunnel, (x) => rate(x).toFixed(0))})`,
  );
  console.log(
    `   direct, the host's git (reference)      ${rate(m(r.clone.host)).toFixed(1)} MiB/s  ${s(m(r.clone.host))}  (${list(r.clone.host, (x) => rate(x).toFixed(0))})`,
  );
  const cloneRatio = m(r.clone.container) / m(r.clone.broker);
  console.log(
    `   broker / direct: ${cloneRatio.toFixed(2)}× the rate (host's git: ${(m(r.clone.host) / m(r.clone.broker)).toFixed(2)}×, tunnel: ${(m(r.clone.tunnel) / m(r.clone.broker)).toFixed(2)}×); target ≥ 0.70× — ${cloneRatio >= 0.7 ? "met" : "NOT met"}`,
  );
  console.log(`2. npm install of ${PACKAGES} packages (fresh cache and node_modules), seconds:`);
  console.log(
    `   direct, container on the host network   ${s(m(r.install.container))}  (${list(r.install.container, (x) => (x / 1000).toFixed(2))})`,
  );
  console.log(
    `   broker, the task's container            ${s(m(r.install.broker))}  (${list(r.install.broker, (x) => (x / 1000).toFixed(2))})`,
  );
  console.log(
    `   plain CONNECT tunnel, task's container  ${s(m(r.install.tunnel))}  (${list(r.install.tunnel, (x) => (x / 1000).toFixed(2))})`,
  );
  console.log(
    `   direct, the host's npm (reference)      ${s(m(r.install.host))}  (${list(r.install.host, (x) => (x / 1000).toFixed(2))})`,
  );
  const installRatio = m(r.install.broker) / m(r.install.container);
  console.log(
    `   broker / direct: ${installRatio.toFixed(2)}× the time (host's npm: ${(m(r.install.broker) / m(r.install.host)).toFixed(2)}×, tunnel: ${(m(r.install.broker) / m(r.install.tunnel)).toFixed(2)}×); target ≤ 1.20× — ${installRatio <= 1.2 ? "met" : "NOT met"}`,
  );
  console.log(`3. ${REQUESTS} GETs on one kept-alive TLS connection, per request p50 (p90), median of rounds:`);
  const ms = (x: number) => `${x.toFixed(3)} ms`;
  for (const [k, label] of [
    ["direct", "direct, container on the host network  "],
    ["tunnel", "plain CONNECT tunnel (egress proxy)    "],
    ["broker", "broker (TLS ended, token swapped)      "],
  ] as const)
    console.log(`   ${label} ${ms(m(r.lat[k]))} (${ms(m(r.latP90[k]))})  (p50 of each round: ${list(r.lat[k], (x) => x.toFixed(3))})`);
  const added = m(r.lat.broker) - m(r.lat.tunnel);
  console.log(
    `   added by the broker over the tunnel: ${ms(added)} p50 (over direct: ${ms(m(r.lat.broker) - m(r.lat.direct))}); target ≤ 2 ms — ${added <= 2 ? "met" : "NOT met"}`,
  );
} finally {
  if (directBox) Bun.spawnSync(["docker", "rm", "-f", directBox]);
  dispose();
  api.kill();
  await upstream.close();
  await registry.stop();
  await host.stop();
  rmSync(scratch, { recursive: true, force: true });
}
