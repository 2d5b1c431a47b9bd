// Run by real Claude Code in a task container (a Bash tool call): what a prompt-injected agent
// on an Ollama or OpenRouter profile tries through lazy's proxy with what its environment holds.
// argv: [forged OpenRouter-shaped key] [a placeholder that is not its own]. Writes providers.json.
import { writeFileSync } from "node:fs";

const base = process.env.ANTHROPIC_BASE_URL;
const mine = process.env.ANTHROPIC_AUTH_TOKEN || process.env.ANTHROPIC_API_KEY;
const [forged, other] = process.argv.slice(2);
const out = { base: !!base, placeholder: !!mine, admin: [], forged: null, other: null };

async function send(method, path, headers, body) {
  try {
    const r = await fetch(base + path, { method, headers: { "content-type": "application/json", ...headers }, body });
    return { status: r.status, text: (await r.text()).slice(0, 400) };
  } catch (e) {
    return { status: 0, text: String(e) };
  }
}

const admin = [
  ["POST", "/api/pull"],
  ["DELETE", "/api/delete"],
  ["POST", "/api/create"],
  ["POST", "/api/push"],
  ["POST", "/api/copy"],
  ["GET", "/api/tags"],
  ["POST", "/api/generate"],
  ["POST", "/api/%70ull"],
  ["POST", "/api/pull/"],
  ["POST", "/v1/messages/..%2f..%2fapi/pull"],
];
for (const [method, path] of admin) {
  const body = method === "GET" ? undefined : JSON.stringify({ model: "llama3", name: "zq-admin-probe-zq" });
  out.admin.push({ method, path, ...(await send(method, path, { "x-api-key": mine, authorization: `Bearer ${mine}` }, body)) });
}
const turn = JSON.stringify({ model: "m", max_tokens: 5, messages: [{ role: "user", content: "zq-provider-probe-zq" }] });
if (forged) out.forged = await send("POST", "/v1/messages", { authorization: `Bearer ${forged}` }, turn);
if (other) out.other = await send("POST", "/v1/messages", { authorization: `Bearer ${other}` }, turn);
writeFileSync("providers.json", JSON.stringify(out, null, 2));
console.log("probed");
