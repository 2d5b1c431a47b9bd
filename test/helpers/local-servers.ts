/**
 * What the real local servers of the broker tests share (the git host, the npm registry): a CA
 * of the test's own and a server certificate it signs, a free port, a bounded wait for it, and a
 * bounded stop of a process group. The broker reaches them by a made-up DNS name
 * (git.lazy.test) and trusts them only because the test hands it this CA; the certificate also
 * names localhost and 127.0.0.1 so host clients can reach the same server without a resolver.
 * Standalone (no dist/lazy needed): the servers' own tests run without a build.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";

export interface ServerTls {
  caFile: string;
  caPem: string;
  certFile: string;
  keyFile: string;
}

/** In folder `dir`: ca.pem/ca.key and srv.pem/srv.key for DNS:`name`, localhost and 127.0.0.1. */
export function serverTls(dir: string, name: string, caName = `lazy test CA for ${name}`): ServerTls {
  const run = (args: string[]) => {
    const r = Bun.spawnSync(["openssl", ...args], { cwd: dir, stdout: "pipe", stderr: "pipe" });
    if (r.exitCode !== 0) throw new Error(`openssl ${args.join(" ")}: ${r.stderr.toString()}`);
  };
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
  run([
    "req",
    "-x509",
    ...ec,
    "-keyout",
    "ca.key",
    "-out",
    "ca.pem",
    "-days",
    "2",
    "-subj",
    `/CN=${caName}`,
    "-addext",
    "basicConstraints=critical,CA:TRUE",
    "-addext",
    "keyUsage=critical,keyCertSign,cRLSign",
  ]);
  run(["req", ...ec, "-keyout", "srv.key", "-out", "srv.csr", "-subj", `/CN=${name}`]);
  Bun.spawnSync(
    [
      "sh",
      "-c",
      `printf '%s\\n' "$0" "$1" "$2" > ext.cnf`,
      `subjectAltName=DNS:${name},DNS:localhost,IP:127.0.0.1`,
      "extendedKeyUsage=serverAuth",
      "basicConstraints=CA:FALSE",
    ],
    { cwd: dir },
  );
  run([
    "x509",
    "-req",
    "-in",
    "srv.csr",
    "-CA",
    "ca.pem",
    "-CAkey",
    "ca.key",
    "-CAcreateserial",
    "-out",
    "srv.pem",
    "-days",
    "2",
    "-extfile",
    "ext.cnf",
  ]);
  const caFile = join(dir, "ca.pem");
  return { caFile, caPem: readFileSync(caFile, "utf8"), certFile: join(dir, "srv.pem"), keyFile: join(dir, "srv.key") };
}

/** A port free on 127.0.0.1 right now, for servers that cannot listen on port 0 and say which. */
export function freePort(): number {
  const s = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = s.port;
  s.stop(true);
  return port;
}

/** Whether something accepts a TCP connection on 127.0.0.1:`port` now. */
export function listening(port: number): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    Bun.connect({
      hostname: "127.0.0.1",
      port,
      socket: {
        open: (s) => {
          s.end();
          resolve(true);
        },
        connectError: () => resolve(false),
        data() {},
      },
    }).catch(() => resolve(false));
  });
}

/**
 * Resolves once the server says it is up (`ready`: a sign only it gives, so another process that
 * took the port between freePort() and its bind is not mistaken for it) and 127.0.0.1:`port`
 * accepts a connection; throws after `ms`, or as soon as `proc` has exited, naming `what` and
 * what `hint` says (the server's own error output).
 */
export async function waitForPort(
  port: number,
  what: string,
  ms: number,
  hint: () => string,
  proc: { exitCode: number | null },
  ready: () => boolean,
): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (proc.exitCode !== null) throw new Error(`${what} exited (${proc.exitCode}) before it listened on 127.0.0.1:${port}\n${hint()}`);
    if (ready() && (await listening(port))) return;
    await Bun.sleep(50);
  }
  throw new Error(`${what} did not listen on 127.0.0.1:${port} within ${ms} ms\n${hint()}`);
}

/**
 * A process spawned through `setsid` leads its own group: stopping it stops its children too
 * (nginx's workers, fcgiwrap's and git's). SIGTERM, then SIGKILL after `ms`; resolves when gone.
 */
export async function stopGroup(proc: { pid: number; exited: Promise<number> }, ms = 5_000): Promise<void> {
  const signal = (sig: NodeJS.Signals) => {
    try {
      process.kill(-proc.pid, sig);
    } catch {
      // already gone
    }
  };
  signal("SIGTERM");
  const timer = setTimeout(() => signal("SIGKILL"), ms);
  await proc.exited;
  clearTimeout(timer);
  signal("SIGKILL"); // a child that outlived its leader
}

/**
 * `start` again (up to 3 times) when its server lost the free port to another process between
 * freePort() and its bind: several test files share this machine.
 */
export async function withPortRetry<T>(start: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start();
    } catch (e) {
      if (attempt >= 3 || !/Address already in use|EADDRINUSE/.test(String(e))) throw e;
    }
  }
}
