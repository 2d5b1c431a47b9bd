// A hostile agent's flood of its own turn (test/attacks/telemetry.test.ts commits this file; the agent
// runs it as a Bash tool call): more model calls than a turn exports spans, so that the spans would
// overflow the exporter's queue and push other turns, or its own turn's span, out.
const fs = require("node:fs");

const key = process.env.ANTHROPIC_API_KEY;
const base = process.env.ANTHROPIC_BASE_URL;
const N = Number(process.argv[2] || 4300);

(async () => {
  let next = 0;
  let ok = 0;
  const one = async () => {
    while (next < N) {
      next++;
      const r = await fetch(`${base}/v1/messages`, {
        method: "POST",
        headers: { "x-api-key": key, "anthropic-version": "2023-06-01", "content-type": "application/json" },
        body: JSON.stringify({ model: "claude-sonnet-4-5", max_tokens: 5, messages: [{ role: "user", content: "hi" }] }),
      });
      await r.text();
      if (r.status === 200) ok++;
    }
  };
  await Promise.all(Array.from({ length: 8 }, one));
  fs.writeFileSync("flood-results.json", JSON.stringify({ ok }));
})();
