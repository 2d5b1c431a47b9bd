// A prompt-injected agent's attempts to get around how lazy's MCP route reads the caller
// (issue 26, the attacker's pass): its token where the route does not look, a connection kept
// alive after an admitted call, Expect: 100-continue with a token that is not its own, two
// Authorization headers. Run from inside its task container during its own turn
// (test/attacks/probe-mcp.test.ts commits this file; the agent runs it as a Bash tool call).
// Every call is report_progress with a text naming the attempt, so the test can see on the host
// which ones ran. Writes what it saw to ./probe-results.json in its worktree.
// Usage: node probe-mcp-agent.mjs OTHER_TASKS_MCP_TOKEN

import { readFileSync, writeFileSync } from "node:fs";
import net from "node:net";

const url = new URL(JSON.parse(readFileSync("/lazy/harness/mcp.json", "utf8")).mcpServers.lazy.url);
const mine = process.env.LAZY_MCP_TOKEN;
const other = process.argv[2];
const out = { hasToken: Boolean(mine) };

const body = (note) =>
  JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "report_progress", arguments: { note } } });
/** One HTTP/1.1 request's bytes: `lines` are extra header lines. */
const request = (path, lines, note, version = "1.1") => {
  const b = body(note);
  return (
    `POST ${path} HTTP/${version}\r\nHost: ${url.host}\r\n${lines.map((l) => `${l}\r\n`).join("")}` +
    `Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: ${Buffer.byteLength(b)}\r\n\r\n${b}`
  );
};
/** The status lines of every answer on the connection, in order. */
const statuses = (text) => [...text.matchAll(/HTTP\/1\.[01] (\d{3})/g)].map((m) => Number(m[1]));

/** Send `first`, wait for its whole answer, then send `second` on the same connection. */
function twoOnOneConnection(first, second) {
  return new Promise((resolve) => {
    const s = net.connect(Number(url.port), url.hostname);
    let got = "";
    let step = 0;
    const finish = () => {
      s.destroy();
      resolve({ statuses: statuses(got), text: got.slice(0, 2000) });
    };
    s.on("connect", () => s.write(first));
    s.on("data", (d) => {
      got += d;
      // The first answer has had time to arrive whole: the second goes on the same connection.
      if (step === 0) {
        step = 1;
        setTimeout(() => s.write(second), 700);
      }
      if (statuses(got).filter((x) => x !== 100).length >= 2) setTimeout(finish, 100);
    });
    s.on("error", finish);
    s.on("close", finish);
    setTimeout(finish, 8000);
  });
}

/** Headers with Expect: 100-continue and no body yet: does the route answer before the body? */
function expectContinue(token) {
  return new Promise((resolve) => {
    const s = net.connect(Number(url.port), url.hostname);
    const b = body("probe-expect");
    let got = "";
    const finish = () => {
      s.destroy();
      resolve({ statuses: statuses(got), text: got.slice(0, 2000) });
    };
    s.on("connect", () =>
      s.write(
        `POST ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${token}\r\nExpect: 100-continue\r\n` +
          `Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: ${Buffer.byteLength(b)}\r\n\r\n`,
      ),
    );
    s.on("data", (d) => {
      got += d;
      // Whatever came first, send the body: a route that read it would run the tool.
      if (statuses(got).length === 1 && !got.includes("probe-sent")) {
        s.write(b);
        got += "\n(probe-sent)\n";
      }
      if (statuses(got).some((x) => x !== 100)) setTimeout(finish, 300);
    });
    s.on("error", finish);
    setTimeout(finish, 8000);
  });
}

out.query = await twoOnOneConnection(
  request(`${url.pathname}?token=${mine}&access_token=${mine}`, [], "probe-query"),
  request(`${url.pathname}?authorization=Bearer%20${mine}`, [`X-Authorization: Bearer ${mine}`], "probe-query-2"),
);
out.basic = await twoOnOneConnection(
  request(url.pathname, [`Authorization: Basic ${Buffer.from(`lazy:${mine}`).toString("base64")}`], "probe-basic"),
  request(url.pathname, [`Proxy-Authorization: Bearer ${mine}`], "probe-proxy-auth"),
);
out.keepAlive = await twoOnOneConnection(
  request(url.pathname, [`Authorization: Bearer ${mine}`], "probe-admitted"),
  request(url.pathname, [], "probe-riding"),
);
out.keepAliveOther = await twoOnOneConnection(
  request(url.pathname, [`Authorization: Bearer ${mine}`], "probe-admitted-2"),
  request(url.pathname, [`Authorization: Bearer ${other}`], "probe-other-after-mine"),
);
out.twoHeaders = await twoOnOneConnection(
  request(url.pathname, [`Authorization: Bearer ${other}`, `authorization: Bearer ${mine}`], "probe-two-headers"),
  request(url.pathname, [`Authorization: Bearer ${mine}`, `AUTHORIZATION: Bearer ${other}`], "probe-two-headers-2"),
);
out.expect = await expectContinue(other);
writeFileSync("probe-results.json", JSON.stringify(out, null, 2));
