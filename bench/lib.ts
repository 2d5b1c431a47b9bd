/** Small timing helpers for the bench scripts: wall-clock of whole processes, percentiles. */
export function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}

export function timeProcess(cmd: string[], env?: Record<string, string>, cwd?: string): number {
  const t = performance.now();
  const r = Bun.spawnSync(cmd, { env: env ?? (process.env as Record<string, string>), cwd, stdout: "ignore", stderr: "pipe" });
  const ms = performance.now() - t;
  if (r.exitCode !== 0) throw new Error(`${cmd.join(" ")} failed: ${r.stderr.toString()}`);
  return ms;
}

export const fmt = (ms: number) => `${ms.toFixed(1)} ms`;
