/**
 * `[container.limits]` in the engine's terms (config/limits.ts resolves them for this host): a
 * fork bomb or a memory hog stops at its own container's bounds. Swap counts in the memory
 * bound (MemorySwap = Memory): a hog is killed, not swapped until the host crawls. Under
 * host-wide memory pressure the kernel picks a container's process before the daemon's.
 */
export interface Limits {
  /** 0: none. */
  pids: number;
  /** Bytes, swap included; 0: none. */
  memory: number;
  /** 0: none. */
  nanoCpus: number;
}

export function hostConfig(l: Limits): Record<string, number> {
  return {
    ...(l.pids ? { PidsLimit: l.pids } : {}),
    ...(l.memory ? { Memory: l.memory, MemorySwap: l.memory } : {}),
    ...(l.nanoCpus ? { NanoCpus: l.nanoCpus } : {}),
    OomScoreAdj: 500,
  };
}
