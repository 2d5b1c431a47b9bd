/**
 * Disk: what tasks fill and what lazy keeps free. `measure.ts` walks folders (du, blocks) and
 * reads a filesystem's free space (statfs); `reserve.ts` is the daemon's ballast, freed when
 * the disk runs low so the store, audit and log never fail for room. The per-task bound
 * (`[container.limits] disk`) is applied by the runner (runner/disk-bound.ts).
 */
export { human, type Space, space, type Walked, walk } from "./measure";
export { isFull, RESERVE_FILE, Reserve, release, sizes } from "./reserve";
