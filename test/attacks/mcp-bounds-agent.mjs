// A prompt-injected agent flooding lazy's writing MCP tools from inside its task container during
// its own turn (test/attacks/mcp-bounds.test.ts commits this file; the agent runs it as a Bash
// tool call). Usage: node mcp-bounds-agent.mjs finish|ask_human COUNT. Writes what it saw to
// ./flood-<tool>.json in its worktree.
import { readFileSync, writeFileSync } from "node:fs";

const url = new URL(JSON.parse(readFileSync("/lazy/harness/mcp.json", "utf8")).mcpServers.lazy.url);
const token = process.env.LAZY_MCP_TOKEN;
const tool = process.argv[2];
const count = Number(process.argv[3]);
const text = (i) => `${tool} ${i} ${"x".repeat(8000)}`.slice(0, tool === "finish" ? 8000 : 4000);
const args = (i) => (tool === "finish" ? { summary: text(i) } : { question: text(i) });
const out = { hasToken: Boolean(token), ok: 0, toolError: 0, other: 0, sample: "", otherSample: "" };
let next = 0;
await Promise.all(
  Array.from({ length: 50 }, async () => {
    while (next < count) {
      const i = next++;
      const r = await fetch(url, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
        body: JSON.stringify({ jsonrpc: "2.0", id: i + 1, method: "tools/call", params: { name: tool, arguments: args(i) } }),
      }).then(async (res) => ({ status: res.status, body: await res.text() }));
      if (r.status === 200 && /"isError":true/.test(r.body)) {
        out.toolError++;
        out.sample = r.body.slice(0, 600);
      } else if (r.status === 200) out.ok++;
      else {
        out.other++;
        out.otherSample = `${r.status} ${r.body.slice(0, 300)}`;
      }
    }
  }),
);
writeFileSync(`flood-${tool}.json`, JSON.stringify(out, null, 2));
console.log("flood done");
