/**
 * Notifications: someone is told when a task needs a human. The notifier listens on the bus for
 * status moves to waiting, done and failed, builds one notification (payload.ts) and hands it
 * to the channels lazy.toml's [notify] turns on: a webhook (webhook.ts) and the desktop
 * (desktop.ts). It reads the config at each move, so a reload counts from the next one, and
 * nothing it does can fail or slow the turn that moved: sends are detached, errors are logged.
 */
import type { Database } from "bun:sqlite";
import type { Bus, StatusChange } from "../bus";
import type { Config } from "../config";
import type { Logger } from "../util/log";
import { VERSION } from "../version";
import * as Desktop from "./desktop";
import * as Payload from "./payload";
import { Webhook } from "./webhook";

export { argv as desktopArgv, type DesktopTool, desktopTool } from "./desktop";
export { build, type Event, type Notification } from "./payload";
export { BACKOFF_MS, originOf, TIMEOUT_MS, Webhook } from "./webhook";

export interface NotifierDeps {
  db: Database;
  bus: Bus;
  /** The config in force now (it reloads while the daemon runs). */
  config: () => Config;
  /** A stored credential's value ([notify] webhook_credential names one). */
  credential: (name: string) => string | undefined;
  log: Logger;
}

export class Notifier {
  private readonly webhook: Webhook;
  private unsubscribe: (() => void) | undefined;
  private warnedNoDesktop = false;

  constructor(private d: NotifierDeps) {
    this.webhook = new Webhook({ log: d.log, userAgent: `lazy/${VERSION}` });
  }

  start(): void {
    this.unsubscribe ??= this.d.bus.subscribe((c) => {
      if (c.kind === "status") this.onStatus(c);
    });
  }

  stop(): void {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    this.webhook.stop();
  }

  /** Resolves once every queued webhook send has ended (tests). */
  idle(): Promise<void> {
    return this.webhook.idle();
  }

  /** Runs inside the bus's publish, on the turn's path: quick, and never throws. */
  private onStatus(c: StatusChange): void {
    try {
      const n = this.d.config().notify;
      if (!n.webhook && !n.webhook_credential && !n.desktop) return;
      const note = Payload.build(this.d.db, c);
      if (!note) return;
      const ref = note.task.code ?? note.task.id;
      const url = n.webhook ?? (n.webhook_credential ? this.storedUrl(n.webhook_credential, `${note.event} of ${ref}`) : undefined);
      if (url) this.webhook.send(url, JSON.stringify(note), `${note.event} of ${ref}`);
      if (n.desktop) this.desktop(note, ref);
    } catch (e) {
      this.d.log.error(`notify: task ${c.taskId} moved to ${c.to}, but its notification could not be made: ${(e as Error).message}`);
    }
  }

  /**
   * Something about lazy itself needs a human (an OAuth token about to lapse): the same channels
   * as a task's moves, with `{event, message, at}` as the webhook's body. Never throws.
   */
  notice(event: string, message: string): void {
    try {
      const n = this.d.config().notify;
      const url = n.webhook ?? (n.webhook_credential ? this.storedUrl(n.webhook_credential, event) : undefined);
      if (url) this.webhook.send(url, JSON.stringify({ event, message, at: new Date().toISOString() }), event);
      if (!n.desktop) return;
      const tool = Desktop.desktopTool();
      if (tool) Desktop.show(tool, `lazy: ${event.replace(/_/g, " ")}`, message, this.d.log);
    } catch (e) {
      this.d.log.error(`notify: the ${event} notification could not be made: ${(e as Error).message}`);
    }
  }

  /** The webhook URL a stored credential holds; never logged, only its name. */
  private storedUrl(name: string, what: string): string | undefined {
    const value = this.d.credential(name);
    let ok = false;
    try {
      const u = new URL(value ?? "");
      ok = u.protocol === "http:" || u.protocol === "https:";
    } catch {}
    if (ok) return value;
    this.d.log.warn(
      value === undefined
        ? `notify: [notify] webhook_credential names "${name}", which is not stored, so the ${what} notification was dropped; lazy auth set ${name} (the webhook URL on stdin)`
        : `notify: the credential "${name}" that [notify] webhook_credential names does not hold an http(s) URL, so the ${what} notification was dropped`,
    );
    return undefined;
  }

  private desktop(note: Payload.Notification, ref: string): void {
    const tool = Desktop.desktopTool();
    if (!tool) {
      if (!this.warnedNoDesktop)
        this.d.log.warn(
          "notify: desktop = true but neither notify-send nor osascript is on PATH, so no desktop notification is shown; install libnotify-bin (Linux) or set desktop = false",
        );
      this.warnedNoDesktop = true;
      return;
    }
    const body =
      note.event === "done" ? (note.message ?? note.task.title) : `${note.reason ?? note.event}${note.message ? `\n${note.message}` : ""}`;
    Desktop.show(tool, `lazy: ${ref} ${note.event}`, body, this.d.log);
  }
}
