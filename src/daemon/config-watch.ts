/**
 * Keeps the daemon's config current: reloads lazy.toml when it changes, and when an edit
 * breaks it, keeps serving the last good config and says so (status and log).
 */
import { watch, statSync, type FSWatcher } from "node:fs";
import { join } from "node:path";
import { load, formatProblem, FILE, type Config } from "../config";
import type { Logger } from "../util/log";

export interface ConfigState {
  config: Config;
  loadedAt: string;
  /** Set while the file on disk is broken: the problems, and since when. */
  broken: { since: string; problems: string[] } | null;
}

export class ConfigWatch {
  state: ConfigState;
  private watcher: FSWatcher | undefined;
  private timer: Timer | undefined;
  private debounce: Timer | undefined;
  private lastStamp = "";

  constructor(
    private root: string,
    initial: Config,
    private log: Logger,
    private onChange: (config: Config) => void,
    /** Checks beyond the schema (the proxy's credential map); problems make the edit broken. */
    private validate: (config: Config) => string[] = () => [],
  ) {
    this.state = { config: initial, loadedAt: new Date().toISOString(), broken: null };
    this.lastStamp = this.stamp();
  }

  start(): void {
    // Editors replace files by rename, which a watch on the file itself misses: watch the folder.
    try {
      this.watcher = watch(this.root, (_event, name) => {
        if (name === FILE) this.schedule();
      });
    } catch (e) {
      this.log.warn(`cannot watch ${this.root} (${(e as Error).message}); polling lazy.toml instead`);
    }
    // A poll backs the watcher up (network filesystems, missed events).
    this.timer = setInterval(() => {
      if (this.stamp() !== this.lastStamp) this.schedule();
    }, 1000);
    this.timer.unref();
  }

  stop(): void {
    this.watcher?.close();
    clearInterval(this.timer);
    clearTimeout(this.debounce);
  }

  private schedule(): void {
    clearTimeout(this.debounce);
    this.debounce = setTimeout(() => this.reload(), 50);
  }

  private stamp(): string {
    try {
      const s = statSync(join(this.root, FILE));
      return `${s.mtimeMs}:${s.size}:${s.ino}`;
    } catch {
      return "absent";
    }
  }

  reload(): void {
    const stamp = this.stamp();
    if (stamp === this.lastStamp && !this.state.broken) return;
    this.lastStamp = stamp;
    const r = load(this.root);
    const problems = r.ok ? this.validate(r.config) : r.problems.map(formatProblem);
    if (r.ok && !problems.length) {
      this.state = { config: r.config, loadedAt: new Date().toISOString(), broken: null };
      this.log.info(`${FILE} reloaded`);
    } else {
      this.state = { ...this.state, broken: { since: this.state.broken?.since ?? new Date().toISOString(), problems } };
      this.log.error(`${FILE} is broken; keeping the last good config from ${this.state.loadedAt}:\n  ${problems.join("\n  ")}`);
    }
    this.onChange(this.state.config);
  }
}
