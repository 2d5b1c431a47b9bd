/**
 * `[container.limits]`: what one task container (or one of lazy's own call containers) may take
 * of the host: processes, memory, CPU and disk. On by default, so one fork bomb or memory hog takes its
 * own container down, not the host and the daemon (README "Limits" says why these defaults).
 * The values are kept as written; `resolveLimits` turns "auto" into this host's figures.
 */
import { cpus as hostCpus, totalmem } from "node:os";
import { z } from "zod";

const SIZE = /^(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?$/i;
const UNITS: Record<string, number> = { "": 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3, t: 1024 ** 4 };
/** Below this a harness (node) cannot even start: a typo like "512" (bytes) is refused, not obeyed. */
const MIN_MEMORY = 64 * 1024 ** 2;
/** A harness's own files (its home, a turn's events, the worktree's checkout) take a few MiB: a typo like "512" is refused. */
const MIN_DISK = 16 * 1024 ** 2;
/**
 * The default disk bound. A real task (a large repository's worktree with its dependencies
 * installed, a build's output, package caches in the container) stays under a few GiB; 10 GiB
 * lets such a build through while one runaway task (a loop writing logs, a `dd`) is stopped
 * long before it fills a laptop's disk. The whole disk has its own floor (disk/reserve.ts).
 */
export const DEFAULT_DISK = "10g";

/** Bytes of a size such as "4g", "512m", "1.5G"; undefined when it does not parse. */
export function bytesOf(v: string): number | undefined {
  const m = SIZE.exec(v.trim());
  if (!m) return undefined;
  const n = Math.floor(Number(m[1]) * UNITS[m[2]!.toLowerCase()]!);
  return Number.isFinite(n) ? n : undefined;
}

export const ContainerLimits = z
  .strictObject({
    pids: z
      .union([z.number().int().min(64).max(4_194_304), z.literal("off")])
      .default(1024)
      .describe('Most processes and threads one container may have at once (a fork bomb stops there); "off" for no limit. At least 64.'),
    memory: z
      .string()
      .refine((v) => v === "auto" || v === "off" || (bytesOf(v) ?? 0) >= MIN_MEMORY, {
        message: 'expected a size of at least 64m such as "4g" or "512m", or "auto" (half of this host\'s memory), or "off"',
      })
      .default("auto")
      .describe(
        'Memory one container may use, swap included (past it the kernel kills a process inside it): a size like "4g", "auto" (half of the host\'s memory) or "off".',
      ),
    cpus: z
      .union([z.number().min(0.1).max(1024), z.enum(["auto", "off"])])
      .default("auto")
      .describe('CPUs one container may use: a number like 1.5, "auto" (all of the host\'s cores but half of one) or "off".'),
    disk: z
      .string()
      .refine((v) => v === "off" || (bytesOf(v) ?? 0) >= MIN_DISK, {
        message: 'expected a size of at least 16m such as "10g" or "512m", or "off"',
      })
      .default(DEFAULT_DISK)
      .describe(
        'Disk one task may fill: its worktree, its folders under lazy\'s home (turns, home, harness, git) and its container\'s writable layer (/tmp included), together. Past it the turn is stopped and the task waits; raising it lets the task go on at once. A size like "10g", or "off".',
      ),
  })
  .describe("What one task container may take of the host.");
export type ContainerLimits = z.infer<typeof ContainerLimits>;

/** The limits in the engine's terms; 0 means none. */
export interface Resolved {
  pids: number;
  /** Bytes, swap included. */
  memory: number;
  nanoCpus: number;
  /** Bytes one task may fill on disk; 0: none (the runner's disk watch, not the engine, holds it). */
  disk: number;
}

/** The limits for this host: "auto" becomes half its memory, all its cores but half of one. */
export function resolveLimits(l: ContainerLimits): Resolved {
  const cores = hostCpus().length || 1;
  const cpus = l.cpus === "off" ? 0 : l.cpus === "auto" ? Math.max(1, cores - 0.5) : Math.min(l.cpus, cores);
  return {
    pids: l.pids === "off" ? 0 : l.pids,
    memory: l.memory === "off" ? 0 : l.memory === "auto" ? Math.floor(totalmem() / 2) : bytesOf(l.memory)!,
    nanoCpus: Math.round(cpus * 1e9),
    disk: l.disk === "off" ? 0 : bytesOf(l.disk)!,
  };
}

/**
 * `[limits]`: what the whole project may run at once. `max_running` turns run at a time; a turn
 * started past it is queued (its task shows `queued`) and starts when a running turn ends, in
 * the order they were started (runner/turn-queue.ts).
 */
export const ProjectLimits = z
  .strictObject({
    max_running: z
      .union([z.number().int().min(1).max(1024), z.literal("auto")])
      .default("auto")
      .describe(
        'Turns of the project\'s tasks that run at once; more are queued and start, in order, as running ones end. "auto": min(cores, memory in GiB / 2), at least 1.',
      ),
  })
  .describe("What the project may run at once.");
export type ProjectLimits = z.infer<typeof ProjectLimits>;

/** `auto` for this host: one turn per core, and per 2 GiB of memory (a harness and its tools take about that), at least 1. */
export function autoMaxRunning(cores = hostCpus().length || 1, memory = totalmem()): number {
  return Math.max(1, Math.min(cores, Math.floor(memory / 1024 ** 3 / 2)));
}

/** How many turns may run at once under `[limits]`. */
export function maxRunning(l: ProjectLimits): number {
  return l.max_running === "auto" ? autoMaxRunning() : l.max_running;
}
