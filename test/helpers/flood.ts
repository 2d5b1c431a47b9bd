/**
 * A connection flood, run as a process of its own (`bun test/helpers/flood.ts PORT COUNT SECONDS`):
 * what issue 17 saw from inside a container. COUNT connections, each sending a whole chunked
 * request head and then one byte of body every 10 s, never finishing. It prints a JSON line of
 * counts every second and a last one when SECONDS are up, then closes everything and exits.
 * FLOOD_KEY in its environment: the credential each request presents (a task's placeholder, so
 * the proxy admits the request and waits for its body; with none it is refused at once).
 */
import { connect, type Socket } from "node:net";

const [port, count, seconds] = process.argv.slice(2).map(Number) as [number, number, number];
const KEY = process.env.FLOOD_KEY ? `x-api-key: ${process.env.FLOOD_KEY}\r\n` : "";
const HEAD = `POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n${KEY}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`;
const stats = { opened: 0, closed: 0, answered: 0, status429: 0, errors: 0, open: 0, maxOpen: 0 };
const sockets: Socket[] = [];
const t0 = Date.now();

function one() {
  const s = connect(port, "127.0.0.1");
  s.on("connect", () => {
    stats.opened++;
    stats.open++;
    stats.maxOpen = Math.max(stats.maxOpen, stats.open);
    s.write(HEAD);
  });
  s.on("data", (d) => {
    stats.answered++;
    if (d.toString("latin1", 0, 12) === "HTTP/1.1 429") stats.status429++;
  });
  s.on("error", () => stats.errors++);
  s.on("close", () => {
    stats.closed++;
    stats.open = Math.max(0, stats.open - 1);
  });
  sockets.push(s);
}

// Opened in batches, so the loop can take the connects as they complete.
for (let i = 0; i < count; i += 500) {
  for (let j = i; j < Math.min(count, i + 500); j++) one();
  await Bun.sleep(10);
}
const trickle = setInterval(() => {
  for (const s of sockets) if (!s.destroyed && s.readyState === "open") s.write("1\r\nx\r\n");
}, 10_000);
const report = setInterval(() => console.log(JSON.stringify({ ms: Date.now() - t0, ...stats })), 1000);
await Bun.sleep(Math.max(0, seconds * 1000 - (Date.now() - t0)));
clearInterval(trickle);
clearInterval(report);
console.log(JSON.stringify({ ms: Date.now() - t0, final: true, ...stats }));
for (const s of sockets) s.destroy();
process.exit(0);
