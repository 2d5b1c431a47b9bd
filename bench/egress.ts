/**
 * A 100 MB download through lazy's egress proxy against the same download straight from the
 * server, in the same run: a server on the host (Bun.serve in its own process, bound to
 * 0.0.0.0) answers GET with 100 MB; the project allows `127.0.0.1:PORT`. Two clients:
 *  - in a container (node, as an agent's tool would run): through the egress proxy from the
 *    task's own container on the fenced project network, against direct from a container on
 *    a plain Docker network the bench makes (to the server at that network's gateway);
 *  - on the host (this process, Bun.connect): through the egress proxy at the project's
 *    gateway, by CONNECT (how HTTPS goes) and by absolute-form plain HTTP, against direct to
 *    127.0.0.1:PORT.
 * Rounds interleave them; each figure is the median. Target: through the proxy ≥ 70 % of the
 * direct rate. For reference, nginx (when on PATH) relays the same download as a plain reverse
 * proxy (proxy_buffering off, 512 KiB buffers: a C relay's cost on this machine).
 * Run: bun run build && bun bench/egress.ts [rounds]   (needs root for the fence, Docker, the test images)
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import * as Mock from "../test/helpers/providers";
import { containerProject, pct, trustToml } from "./lib";

/** LAZY_BENCH_BIN: another build to measure (bench/README.md compares two in turn). */
const BIN = process.env.LAZY_BENCH_BIN ?? resolve(import.meta.dir, "../dist/lazy");
const rounds = Number(process.argv[2] ?? 7);
const BASE = process.env.LAZY_BENCH_BASE ?? "lazy-test/node:bookworm";
const SIZE = 100 * 1024 * 1024;

const server = Bun.spawn(
  [
    process.execPath,
    "-e",
    `const body = Buffer.alloc(${SIZE}, 120); const s = Bun.serve({ hostname: "0.0.0.0", port: 0, fetch: () => new Response(body) }); console.log(s.port);`,
  ],
  { stdout: "pipe", stderr: "inherit" },
);
const reader = server.stdout.getReader();
const port = Number(new TextDecoder().decode((await reader.read()).value).trim());
reader.releaseLock();

// nginx as the reference relay, if there is one.
const nginxDir = mkdtempSync(join(tmpdir(), "lazy-bench-egress-nginx-"));
const nginxPort = 20000 + Math.floor(Math.random() * 20000);
let nginx: ReturnType<typeof Bun.spawn> | undefined;
if (Bun.which("nginx")) {
  writeFileSync(
    join(nginxDir, "nginx.conf"),
    `worker_processes 1; daemon off; pid ${nginxDir}/nginx.pid; error_log ${nginxDir}/error.log;
events {}
http { access_log off; proxy_temp_path ${nginxDir}; client_body_temp_path ${nginxDir};
  server { listen 127.0.0.1:${nginxPort};
    location / { proxy_pass http://127.0.0.1:${port}; proxy_buffering off; proxy_buffer_size 512k; proxy_buffers 4 512k; proxy_busy_buffers_size 1m; } } }
`,
  );
  nginx = Bun.spawn(["nginx", "-c", join(nginxDir, "nginx.conf")], { stdout: "ignore", stderr: "inherit" });
  await Bun.sleep(500);
}

const upstream = await Mock.anthropic();
// The task's turn holds its container up while the bench runs (a container is stopped when its turn ends).
upstream.reply = { text: "done.", toolUse: { name: "Bash", input: { command: "sleep 590", description: "hold", timeout: 600_000 } } };
const { root, env: projectEnv, sh, dispose } = containerProject(BIN, "egress", BASE, upstream.url);
const NET = `lazy-bench-egress-${Math.random().toString(16).slice(2, 8)}`;
let plainBox = "";

const copied = new Set<string>();

/** The container client: one download, timed inside the container (node's own sockets). */
const CLIENT = `const net = require("node:net"); const [host, port, th, tp] = process.argv.slice(2);
let got = 0, head = !!th, text = "", t0 = performance.now();
const get = "GET / HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n";
const s = net.connect({ host, port: Number(port) }, () => s.write(th ? "CONNECT " + th + ":" + tp + " HTTP/1.1\\r\\n\\r\\n" : get));
s.on("data", (d) => { if (head) { text += d.toString("latin1"); if (!text.includes("\\r\\n\\r\\n")) return; head = false; s.write(get); return; } got += d.length; });
s.on("close", () => { if (got < ${SIZE}) { console.log("short " + got); process.exit(1); } console.log(performance.now() - t0); });`;
async function inContainer(box: string, args: string[]): Promise<number> {
  // Copied in once per box: a task container does not see the project at its host path.
  if (!copied.has(box)) {
    sh(["docker", "cp", join(root, "dl.cjs"), `${box}:/tmp/dl.cjs`]);
    copied.add(box);
  }
  const p = Bun.spawn(["docker", "exec", "-u", "1000", box, "node", "/tmp/dl.cjs", ...args], { stdout: "pipe", stderr: "pipe" });
  const [out, err] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  const ms = Number(out.trim());
  // (An empty answer is Number("") = 0: a client that never ran, not an instant download.)
  if (!out.trim() || !Number.isFinite(ms)) throw new Error(`the container client said: ${out}${err}`);
  return ms;
}

/** Bytes of one download, and how long it took; `proxy` by CONNECT or plain HTTP, or none. */
function download(via: { host: string; port: number; mode: "connect" | "plain" } | null, to = port): Promise<number> {
  return new Promise((done, fail) => {
    const t0 = performance.now();
    let got = 0;
    let head = via?.mode === "connect";
    let text = "";
    const get = (path: string) => `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`;
    void Bun.connect({
      hostname: via ? via.host : "127.0.0.1",
      port: via ? via.port : to,
      socket: {
        open: (s) => {
          if (!via) s.write(get("/"));
          else if (via.mode === "plain") s.write(get(`http://127.0.0.1:${port}/`));
          else s.write(`CONNECT 127.0.0.1:${port} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`);
        },
        data: (s, d) => {
          if (head) {
            text += d.toString("latin1");
            if (!text.includes("\r\n\r\n")) return;
            if (!text.startsWith("HTTP/1.1 200")) fail(new Error(`the proxy said ${text.split("\r\n\r\n")[1] ?? text.split("\r\n")[0]}`));
            head = false;
            s.write(get("/"));
            return;
          }
          got += d.length;
        },
        close: () => (got >= SIZE ? done(performance.now() - t0) : fail(new Error(`only ${got} bytes arrived`))),
        error: (_s, e) => fail(e),
      },
    }).catch(fail);
  });
}

try {
  writeFileSync(
    join(root, "lazy.toml"),
    `[container]\nbase = "${BASE}"\nallow = ["127.0.0.1:${port}"]\n\n[proxy.upstreams]\nanthropic = "${upstream.url}"\n`,
  );
  // allow is trust-bearing: as its person would, after writing it.
  trustToml(BIN, root, projectEnv);
  // A task's container makes the network, the fence and the egress proxy; its env says where that is.
  sh([BIN, "task", "add", "warm up", "--code", "warm-up"]);
  sh([BIN, "start", "warm-up"]);
  let id = "";
  for (const deadline = Date.now() + 180_000; !id && Date.now() < deadline; await Bun.sleep(500))
    if (upstream.received.some((r) => r.method === "POST"))
      id = sh(["docker", "ps", "-q", "--filter", `label=dev.lazy.root=${root}`])
        .trim()
        .split("\n")[0]!;
  if (!id) throw new Error("the warm-up turn did not start within 180 s");
  const env = JSON.parse(sh(["docker", "inspect", id]))[0].Config.Env as string[];
  const proxy = new URL(env.find((e) => e.startsWith("HTTP_PROXY="))!.slice("HTTP_PROXY=".length));
  const via = { host: proxy.hostname, port: Number(proxy.port) };
  // The container clients: the task's own (fenced) and one on a plain network of the bench's.
  writeFileSync(join(root, "dl.cjs"), CLIENT);
  const image = JSON.parse(sh(["docker", "inspect", id]))[0].Config.Image as string;
  sh(["docker", "network", "create", NET]);
  const plainGw = JSON.parse(sh(["docker", "network", "inspect", NET]))[0].IPAM.Config[0].Gateway as string;
  plainBox = sh([
    "docker",
    "run",
    "-d",
    "--rm",
    "--network",
    NET,
    "-v",
    `${root}:${root}:ro`,
    "--entrypoint",
    "sleep",
    image,
    "infinity",
  ]).trim();
  const boxDirect = () => inContainer(plainBox, [plainGw, String(port)]);
  const boxEgress = () => inContainer(id, [via.host, String(via.port), "127.0.0.1", String(port)]);
  await download(null); // warm
  await download({ ...via, mode: "connect" });
  await boxDirect();
  await boxEgress();
  const rate = (ms: number) => SIZE / 1024 / 1024 / (ms / 1000);
  const direct: number[] = [];
  const connect: number[] = [];
  const plain: number[] = [];
  const cDirect: number[] = [];
  const cEgress: number[] = [];
  const ngx: number[] = [];
  for (let i = 0; i < rounds; i++) {
    cDirect.push(rate(await boxDirect()));
    cEgress.push(rate(await boxEgress()));
    direct.push(rate(await download(null)));
    connect.push(rate(await download({ ...via, mode: "connect" })));
    plain.push(rate(await download({ ...via, mode: "plain" })));
    if (nginx) ngx.push(rate(await download(null, nginxPort)));
  }
  const m = (xs: number[]) => pct(xs, 50);
  console.log(`egress bench: ${rounds} rounds of 100 MB, egress proxy at ${proxy.host}, ${new Date().toISOString()}`);
  console.log("client in a container:");
  console.log(`direct (plain network)     ${m(cDirect).toFixed(0)} MB/s   (rounds: ${cDirect.map((x) => x.toFixed(0)).join(" ")})`);
  console.log(
    `egress CONNECT (fenced)    ${m(cEgress).toFixed(0)} MB/s   ${(m(cEgress) / m(cDirect)).toFixed(2)}× direct   (rounds: ${cEgress.map((x) => x.toFixed(0)).join(" ")})`,
  );
  console.log("client on the host:");
  console.log(`direct            ${m(direct).toFixed(0)} MB/s   (rounds: ${direct.map((x) => x.toFixed(0)).join(" ")})`);
  console.log(
    `egress CONNECT    ${m(connect).toFixed(0)} MB/s   ${(m(connect) / m(direct)).toFixed(2)}× direct   (rounds: ${connect.map((x) => x.toFixed(0)).join(" ")})`,
  );
  console.log(
    `egress plain HTTP ${m(plain).toFixed(0)} MB/s   ${(m(plain) / m(direct)).toFixed(2)}× direct   (rounds: ${plain.map((x) => x.toFixed(0)).join(" ")})`,
  );
  if (nginx)
    console.log(
      `nginx relay (ref.) ${m(ngx).toFixed(0)} MB/s   ${(m(ngx) / m(direct)).toFixed(2)}× direct   (rounds: ${ngx.map((x) => x.toFixed(0)).join(" ")})`,
    );
  console.log("target: through the proxy ≥ 0.70× direct");
} finally {
  if (plainBox) Bun.spawnSync(["docker", "rm", "-f", plainBox]);
  dispose();
  Bun.spawnSync(["docker", "network", "rm", NET]);
  server.kill();
  nginx?.kill();
  rmSync(nginxDir, { recursive: true, force: true });
  await upstream.close();
}
