/**
 * How the keeper and the daemon tell themselves apart in `ps` and `top`: both run the same
 * binary with the same words (`lazy daemon run`), so the one that spawns each names it through
 * argv[0] (`lazy keeper /path/to/project`, `lazy daemon /path/to/project`: what `ps -ef` and
 * `ps aux` show), and each process names itself through prctl(PR_SET_NAME) ("lazy keeper",
 * "lazy daemon": what `ps -e`, `top` and `pgrep` show, 15 bytes at most). Bun's process.title
 * changes neither on Linux.
 */
export type Role = "keeper" | "daemon";

/** argv[0] for the process that will play `role` for the project at `root`. */
export const argv0 = (role: Role, root: string): string => `lazy ${role} ${root}`;

const PR_SET_NAME = 15;

/** Name this process for ps/top (Linux: its comm); elsewhere process.title only. Never throws. */
export async function name(role: Role, root: string): Promise<void> {
  process.title = argv0(role, root);
  if (process.platform !== "linux") return;
  try {
    const { dlopen, FFIType, ptr } = await import("bun:ffi");
    const libc = dlopen("libc.so.6", {
      prctl: { args: [FFIType.i32, FFIType.ptr, FFIType.u64, FFIType.u64, FFIType.u64], returns: FFIType.i32 },
    });
    libc.symbols.prctl(PR_SET_NAME, ptr(Buffer.from(`lazy ${role}\0`)), 0, 0, 0);
    libc.close();
  } catch {
    // A libc without prctl (musl names it the same; another platform): argv[0] still says it.
  }
}
