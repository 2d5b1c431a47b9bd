/**
 * In-process change notifications: the store's writers (the API, the runner) publish, the
 * dashboard's SSE streams and the notifier subscribe. Listeners must not throw; one that does
 * is dropped. A folder of its own, so the runner reaches it without going into daemon/.
 */
import type { Status } from "../store";

/**
 * `status` is published where a task's status moves (besides the `task` change every write
 * publishes), with what the move recorded: `data` is the status event's data (exit, error,
 * result, stopped, ...), so a subscriber need not read it back.
 */
export type StatusChange = { kind: "status"; taskId: string; from: Status; to: Status; data: Record<string, unknown> };
export type Change = { kind: "task"; taskId: string } | { kind: "config" } | StatusChange;
type Listener = (c: Change) => void;

export class Bus {
  private listeners = new Set<Listener>();
  subscribe(l: Listener): () => void {
    this.listeners.add(l);
    return () => this.listeners.delete(l);
  }
  publish(c: Change): void {
    for (const l of this.listeners) {
      try {
        l(c);
      } catch {
        this.listeners.delete(l);
      }
    }
  }
}
