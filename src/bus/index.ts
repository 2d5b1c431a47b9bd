/**
 * In-process change notifications: the store's writers (the API, the runner) publish, the
 * dashboard's SSE streams subscribe. Listeners must not throw; one that does is dropped.
 * A folder of its own, so the runner reaches it without going into daemon/.
 */
export type Change = { kind: "task"; taskId: string } | { kind: "config" };
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
