/**
 * Keeps the daemon's config current: reloads lazy.toml when it changes, and when an edit
 * breaks it, or sets trust-bearing keys the person has not approved (config/trust.ts), keeps
 * serving the last good, trusted config and says so (status and log). The trust record is
 * watched too, so `lazy trust` applies a waiting edit.
 */
import { type FSWatcher, statSync, watch } from "node:fs";
import { join } from "node:path";
import { type Config, FILE, Trust } from "../config";
import { LazyError } from "../util/errors";
import type { Logger } from "../util/log";

export interface ConfigState {
  config: Config;
  loadedAt: string;
  /** Set while the file on disk is broken: the problems, and since when (`refusal`: untrusted, as data). */
  broken: { since: string; problems: string[]; untrusted: boolean; refusal?: LazyError } | null;
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
    const one = (f: string) => {
      try {
        const s = statSync(f);
        return `${s.mtimeMs}:${s.size}:${s.ino}`;
      } catch {
        return "absent";
      }
    };
    return `${one(join(this.root, FILE))}/${one(Trust.recordFile())}`;
  }

  /**
   * Check lazy.toml (and the trust record) again; the API calls this before every request it
   * serves, so a launch right after an edit uses the edit. Unchanged files cost two stats; a
   * broken file is read again only when it changes.
   */
  reload(): void {
    const stamp = this.stamp();
    if (stamp === this.lastStamp) return;
    this.lastStamp = stamp;
    let r: Trust.Checked;
    try {
      r = Trust.check(this.root);
    } catch (e) {
      // The trust record itself does not read: nothing new is applied.
      const error =
        e instanceof LazyError ? e : LazyError.of("config_untrusted", { reason: "trust_record_unreadable", error: (e as Error).message });
      r = { ok: false, untrusted: true, file: join(this.root, FILE), problems: [], error };
    }
    const problems = r.ok ? this.validate(r.config) : r.untrusted ? [r.error.message, ...r.error.details] : r.error.details;
    if (r.ok && !problems.length) {
      const was = this.state.broken;
      this.state = { config: r.config, loadedAt: new Date().toISOString(), broken: null };
      this.log.info(`${FILE} reloaded${was?.untrusted ? " (now trusted)" : ""}`);
    } else {
      const untrusted = !r.ok && r.untrusted;
      const since = this.state.broken?.since ?? new Date().toISOString();
      this.state = { ...this.state, broken: { since, problems, untrusted, ...(!r.ok && r.untrusted ? { refusal: r.error } : {}) } };
      this.log.error(
        untrusted
          ? `${FILE} changed and is not trusted; keeping the last trusted config from ${this.state.loadedAt}:\n  ${problems.join("\n  ")}`
          : `${join(this.root, FILE)} is broken; keeping the last good config from ${this.state.loadedAt}:\n  ${problems.join("\n  ")}`,
      );
    }
    this.onChange(this.state.config);
  }
}
