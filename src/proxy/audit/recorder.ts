/**
 * Where rows are recorded, on the proxy's thread: written into the columns of a batch
 * (store.ts), handed on within ~50 ms, or at 500 rows. Typed arrays cross threads as one
 * block and hold nothing the collector must trace; 500 queued row objects and their JSON cost
 * the proxy's threads 2-3 µs a request (bench/README.md). Refusals of callers lazy cannot
 * attribute are counted here instead (refusals.ts), and handed on with the batches.
 */
import * as Refusals from "./refusals";
import * as Store from "./store";

export class Recorder {
  private batch = new Store.Builder();
  private counted = new Refusals.Counter();
  private timer: Timer | undefined;

  constructor(
    private sink: (batch: Store.Batch) => void,
    private tallySink: (tally: Refusals.Tally) => void,
  ) {}

  record(r: Store.Row): void {
    if (this.batch.add(r)) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), 50);
  }

  /** A refused caller lazy cannot attribute: counted, never a row (refusals.ts). */
  refused(r: Refusals.Refusal): void {
    if (this.counted.add(r)) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), 50);
  }

  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.batch.take();
    if (batch) this.sink(batch);
    const tally = this.counted.take();
    if (tally) this.tallySink(tally);
  }
}
