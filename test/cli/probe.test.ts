/**
 * `lazy supervise --probe URL`, which a throwaway container on a remote engine runs to learn
 * whether it reaches lazy's proxy: its one line of stdout goes into the launch's refusal, so
 * each way of not reaching says its cause in words (a timeout once crashed it instead:
 * "t.replace is not a function", and that was the refusal a person read).
 */
import { describe, expect, test } from "bun:test";
import { BIN } from "../helpers/lazy";

/** Run the probe (not spawnSync: this process's own servers must answer meanwhile). */
async function probe(url: string): Promise<{ code: number; out: string; err: string }> {
  const p = Bun.spawn([BIN, "supervise", "--probe", url], { stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, out: out.trim(), err };
}

describe("lazy supervise --probe", () => {
  test("an answer of any status is a reach; nothing listening and no answer are said in words", async () => {
    const answering = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("no", { status: 401 }) });
    // Takes the connection and never answers.
    const silent = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    const closed = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    const closedPort = closed.port;
    closed.stop(true);
    try {
      expect(await probe(`http://127.0.0.1:${answering.port}/mcp`)).toEqual({ code: 0, out: "", err: "" });
      expect(await probe(`http://127.0.0.1:${closedPort}/mcp`)).toMatchObject({ code: 1, out: "ECONNREFUSED" });
      const quiet = await probe(`http://127.0.0.1:${silent.port}/mcp`);
      expect(quiet).toMatchObject({ code: 1, out: "no answer within 10 s" });
      expect(quiet.err).not.toContain("unexpected error");
    } finally {
      answering.stop(true);
      silent.stop(true);
    }
  }, 30_000);
});
