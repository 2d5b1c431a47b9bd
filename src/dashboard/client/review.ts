/**
 * The task page's diff as a review (issues 30, 37): files with their counts first (each can be
 * marked viewed: kept in this browser, forgotten when the file changes), then the hunks, unified
 * or split (the choice kept too), each line with its old and new numbers; a click (or Enter) on
 * a line opens a comment box under it, and "Send review" sends the comments as the task's next
 * turn (POST /api/tasks/:ref/review, which checks every comment against the diff and refuses
 * them all, with the reasons, if one names a line it does not show). The bar at the foot of the
 * viewport carries Send review and the page's Accept and Reject, so a long diff never hides them.
 * While a turn runs the last diff stays, marked stale. Everything shown is the agent's: text
 * nodes only. A 6,000-line diff renders as one element a line in blocks laid out only when seen,
 * with one listener for all (bench/review.ts).
 */
import { type Comment, type Side, where } from "../../review";
import type * as Answers from "../answers";
import { ApiError, api, h } from "./dom";
import { grammarFor, hasControl, paint } from "./highlight";

/** A task's diff as the API answers it (diff/diff.ts). */
export type Diff = Answers.Diff;

/** A line's trace as its title reads (text, never markup). */
export function whoWrote(t: Answers.Trace): string {
  if (!t.agent)
    return t.commit
      ? `Not written by an agent task (commit ${t.commit.slice(0, 12)} by ${t.author?.name ?? "someone"})`
      : "Not written by an agent task";
  const task = t.task ? (t.task.code ?? t.task.id) : "?";
  const tool = t.tool ? `${t.tool.name}${t.tool.id ? ` ${t.tool.id}` : ""}` : "the turn as a whole";
  const asked = t.prompt
    ? `\nAsked by ${t.prompt.kind === "task" ? "the task's prompt" : t.prompt.kind === "review" ? "a review" : "lazy send"}: ${t.prompt.text.slice(0, 300)}`
    : "";
  return `Written by task ${task}, turn ${t.turn ?? "?"}, tool call ${tool}, model ${t.contributor?.model_id ?? "not known"}${asked}`;
}
export type DiffFile = Diff["files"][number];
export type Layout = "unified" | "split";

/** Lines (rows, split) a layout block holds. */
const BLOCK = 100;
const LAYOUT_KEY = "lazy.diff.layout";
const HIGHLIGHT_KEY = "lazy.diff.highlight";

const key = (path: string, side: Side, line: number) => `${side}:${line}\0${path}`;

/** A short fingerprint of a file's hunks: a viewed mark holds only while the file is as it was seen. */
function fingerprint(f: DiffFile): string {
  let x = 0x811c9dc5;
  for (const hk of f.hunks)
    for (const l of hk.lines) {
      for (let i = 0; i < l.length; i++) x = Math.imul(x ^ l.charCodeAt(i), 0x01000193);
      x = Math.imul(x ^ 10, 0x01000193);
    }
  return `${f.added}.${f.removed}.${(x >>> 0).toString(36)}`;
}

/** localStorage, when this browser lets the page have it (a private window may not). */
const store = {
  get(k: string): string | null {
    try {
      return localStorage.getItem(k);
    } catch {
      return null;
    }
  },
  set(k: string, v: string): void {
    try {
      localStorage.setItem(k, v);
    } catch {}
  },
};

/** Widest line number in a file's hunks, in digits (the number columns' width). */
function digits(f: DiffFile): number {
  let most = 0;
  for (const hk of f.hunks) {
    const m = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/.exec(hk.header);
    if (m) most = Math.max(most, Number(m[1]) + Number(m[2] ?? 1), Number(m[3]) + Number(m[4] ?? 1));
  }
  return Math.max(3, String(most).length);
}

export class ReviewView {
  /** The comments written so far, by line: kept across reloads of the diff until sent. */
  private comments = new Map<string, Comment>();
  private diff: Diff | null = null;
  private files: DiffFile[] = [];
  private canComment = false;
  private allowed = new Set<string>();
  private running = false;
  private layout: Layout = store.get(LAYOUT_KEY) === "split" ? "split" : "unified";
  private highlight = store.get(HIGHLIGHT_KEY) !== "off";
  /** Each line element's text as the diff has it (what highlighting reads). */
  private raw = new WeakMap<Element, string>();
  /**
   * Blocks are highlighted as they come near the viewport, not all at once: a 6,000-line diff
   * costs the tokens of a few screens, and the page is usable before any of it is highlighted.
   */
  private nearby = new IntersectionObserver(
    (seen) => {
      for (const e of seen)
        if (e.isIntersecting) {
          this.nearby.unobserve(e.target);
          this.paintBlock(e.target as HTMLElement);
        }
    },
    { rootMargin: "800px 0px" },
  );
  private stale = h("p", { class: "stale-note", role: "status", hidden: true });
  private bar = h("div", { class: "review-bar", hidden: true });
  private body = h("div", {});
  private viewedKey: string;

  constructor(
    private el: HTMLElement,
    private path: string,
    /** The page's Accept and Reject for the bar (buttons with data-verb: the page wires and enables them). */
    private decide: HTMLElement,
    /** Told when a review was sent (the page shows the task's new state). */
    private sent: (answer: unknown) => void,
  ) {
    this.viewedKey = `lazy.viewed:${path}`;
    this.body.addEventListener("click", (e) => this.onClick(e));
    this.body.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && (e.target as HTMLElement).dataset?.k) this.onClick(e);
    });
    // Who wrote a line: asked once per line when it is first pointed at or focused (its title).
    const who = (e: Event) => void this.traced(e.target);
    this.body.addEventListener("mouseover", who);
    this.body.addEventListener("focusin", who);
  }

  /** A line of the new side gets its trace (GET …/trace: task, turn, tool call, model) as its title. */
  private async traced(target: EventTarget | null): Promise<void> {
    const at = this.lineOf(target);
    if (!at || at.side !== "new" || at.el.dataset.traced) return;
    at.el.dataset.traced = "asked";
    try {
      const t = await api<Answers.Trace>("GET", `${this.path}/trace?path=${encodeURIComponent(at.path)}&line=${at.line}`);
      at.el.title = whoWrote(t);
      at.el.dataset.traced = t.agent ? "agent" : "person";
    } catch (e) {
      // Not asked again (a group's diff has no trace route). A refusal with words (the line's
      // history took too long to blame: cause and remedy) becomes the line's title.
      at.el.dataset.traced = "none";
      if (e instanceof ApiError && e.status === 409) at.el.title = e.message;
    }
  }

  /** Some diff with files is on the page. */
  get shown(): boolean {
    return this.files.length > 0;
  }

  /** The commit the diff on the page ends at: what an Accept from this page merges, or is refused. */
  get tip(): string | null {
    return this.diff?.tip ?? null;
  }

  /** Show the diff. */
  show(d: Diff): void {
    this.diff = d;
    this.files = d.files;
    this.draw();
  }

  /** What the task's status allows now (`send`: a review is a next turn; `accept`, `reject` go in the bar), and whether a turn runs. */
  setAllowed(allowed: Set<string>, running: boolean): void {
    this.allowed = allowed;
    this.running = running;
    const can = allowed.has("send");
    if (can !== this.canComment) {
      this.canComment = can;
      this.body.classList.toggle("commentable", can);
      for (const l of this.body.querySelectorAll<HTMLElement>("[data-k]")) l.tabIndex = can ? 0 : -1;
    }
    this.drawStale();
    this.drawBar();
  }

  /** A diff that could not be read: the last one stays (marked as such), or the error shows alone. */
  failed(message: string): void {
    if (!this.shown) {
      this.el.replaceChildren(h("p", { class: "error" }, message));
      this.el.classList.remove("muted");
      return;
    }
    this.stale.hidden = false;
    this.stale.textContent = `The diff could not be read again (${message}): this is the last one read.`;
  }

  private draw(): void {
    const d = this.diff;
    if (!d) return;
    this.nearby.disconnect();
    this.body.replaceChildren(...this.render(d));
    if (this.highlight) for (const b of this.body.querySelectorAll(".blk")) this.nearby.observe(b);
    this.el.replaceChildren(this.stale, this.body, this.bar);
    this.el.classList.remove("muted");
    for (const c of this.comments.values()) this.placeComment(c);
    this.drawStale();
    this.drawBar();
  }

  private drawStale(): void {
    const stale = this.running && this.shown;
    this.el.classList.toggle("stale", stale);
    this.stale.hidden = !stale;
    this.stale.textContent = stale
      ? "A turn is running: this is the diff as its last turn left it. It is read again when the turn ends."
      : "";
  }

  private viewed(): Record<string, string> {
    try {
      const v = JSON.parse(store.get(this.viewedKey) ?? "{}");
      return v && typeof v === "object" ? v : {};
    } catch {
      return {};
    }
  }

  private setViewed(f: DiffFile, on: boolean): void {
    const v = this.viewed();
    if (on) v[f.path] = fingerprint(f);
    else delete v[f.path];
    store.set(this.viewedKey, JSON.stringify(v));
  }

  private render(d: Diff): Node[] {
    if (!d.files.length) return [h("p", { class: "muted" }, d.note ?? `No changes on ${d.branch}.`)];
    this.body.classList.toggle("commentable", this.canComment);
    const viewed = this.viewed();
    const seen = d.files.map((f) => viewed[f.path] !== undefined && viewed[f.path] === fingerprint(f));
    const count = h("span", { class: "muted", id: "viewed-count" }, `${seen.filter(Boolean).length} of ${d.files.length} viewed`);
    const items = d.files.map((f, i) =>
      h(
        "li",
        { class: seen[i] ? "viewed" : "", "data-path": f.path },
        h("span", { class: "mark", "aria-hidden": "true" }, seen[i] ? "✓" : ""),
        f.binary ? "bin " : h("span", { class: "plus" }, `+${f.added} `),
        !f.binary && h("span", { class: "minus" }, `−${f.removed} `),
        h("a", { href: `#file-${i}` }, f.path),
      ),
    );
    const layouts = (["unified", "split"] as const).map((l) => {
      const b = h(
        "button",
        { type: "button", "aria-pressed": String(l === this.layout), "data-layout": l },
        l === "unified" ? "Unified" : "Split",
      );
      b.addEventListener("click", () => {
        if (this.layout === l) return;
        this.layout = l;
        store.set(LAYOUT_KEY, l);
        this.draw();
      });
      return b;
    });
    const colours = h("button", { type: "button", "aria-pressed": String(this.highlight), id: "highlight" }, "Highlight");
    colours.addEventListener("click", () => {
      this.highlight = !this.highlight;
      store.set(HIGHLIGHT_KEY, this.highlight ? "on" : "off");
      this.draw();
    });
    const out: Node[] = [
      h(
        "p",
        { class: "muted" },
        `${d.note ? `${d.note} ` : ""}${d.branch}: ${d.files.length} file(s) changed since ${d.base?.slice(0, 10)}${d.cut ? " (the diff is too large to show whole: later files show their counts only)" : ""}`,
      ),
      h(
        "div",
        { class: "diff-tools" },
        h("span", { role: "group", "aria-label": "Diff layout", class: "layouts" }, ...layouts),
        colours,
        count,
      ),
      h("ul", { class: "files" }, ...items),
    ];
    const tab = this.canComment ? 0 : -1;
    d.files.forEach((f, i) => {
      const w = digits(f);
      const hunks = f.hunks.map((hk) => (this.layout === "split" ? this.split(hk, w, tab) : this.unified(hk, w, tab)));
      const box = h("input", { type: "checkbox", "aria-label": `Viewed ${f.path}` });
      box.checked = seen[i]!;
      const file = h(
        "details",
        { class: `file${seen[i] ? " viewed" : ""}`, open: d.files.length <= 20 && !seen[i], id: `file-${i}`, "data-file": String(i) },
        h(
          "summary",
          {},
          f.path,
          " ",
          f.binary ? "(binary)" : `+${f.added} −${f.removed}`,
          h("label", { class: "viewed-box" }, box, " Viewed"),
        ),
        ...hunks,
        !f.hunks.length && !f.binary && h("p", { class: "muted" }, "Hunks not shown (size limit)."),
      );
      box.addEventListener("change", () => {
        this.setViewed(f, box.checked);
        file.classList.toggle("viewed", box.checked);
        file.open = !box.checked;
        items[i]!.classList.toggle("viewed", box.checked);
        items[i]!.querySelector(".mark")!.textContent = box.checked ? "✓" : "";
        count.textContent = `${this.body.querySelectorAll(".files li.viewed").length} of ${d.files.length} viewed`;
      });
      out.push(file);
    });
    return out;
  }

  /** A new block of lines, laid out by the browser only when it comes into view (style.css). */
  private block(hunk: HTMLElement, rows: number): HTMLElement {
    const b = document.createElement("div");
    b.className = "blk";
    b.style.containIntrinsicSize = `auto ${Math.min(BLOCK, rows) * 1.5}em`;
    hunk.append(b);
    return b;
  }

  /** Highlight a block's lines (style.css colours the tokens). */
  private paintBlock(block: HTMLElement): void {
    const f = this.files[Number(block.closest<HTMLElement>("[data-file]")?.dataset.file)];
    const grammar = f && grammarFor(f.path);
    if (!grammar) return;
    for (const el of block.querySelectorAll<HTMLElement>(":scope > span:not(.h), :scope > .srow > span:not(.h):not(.e)")) {
      const text = this.raw.get(el);
      if (text !== undefined) paint(el, text, grammar);
    }
  }

  /** One diff line as an element: its text (the agent's, as text nodes only), its kind, what a comment on it names. */
  private line(text: string, cls: string, k: string | null, ln: string, tab: number): HTMLElement {
    const el = document.createElement("span");
    if (hasControl(text)) paint(el, text, null);
    else el.textContent = text || " ";
    if (cls !== "h" && cls !== "e") this.raw.set(el, text);
    if (cls) el.className = cls;
    el.dataset.ln = ln;
    if (k) {
      el.dataset.k = k;
      el.tabIndex = tab;
    }
    return el;
  }

  private unified(hk: DiffFile["hunks"][number], w: number, tab: number): HTMLElement {
    const m = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(hk.header);
    let old = Number(m?.[1] ?? 0);
    let now = Number(m?.[2] ?? 0);
    const blank = "".padStart(w);
    const hunk = h("div", { class: "hunk" }, h("span", { class: "h" }, hk.header));
    let block: HTMLElement | null = null;
    hk.lines.forEach((l, j) => {
      if (j % BLOCK === 0) block = this.block(hunk, hk.lines.length - j);
      const c = l[0];
      let el: HTMLElement;
      if (c === "-") el = this.line(l, "d", `old:${old}`, `${String(old++).padStart(w)} ${blank}`, tab);
      else if (c === "+") el = this.line(l, "a", `new:${now}`, `${blank} ${String(now++).padStart(w)}`, tab);
      else if (c === " ") el = this.line(l, "", `new:${now}`, `${String(old++).padStart(w)} ${String(now++).padStart(w)}`, tab);
      else el = this.line(l, "h", null, `${blank} ${blank}`, tab);
      block!.append(el);
    });
    return hunk;
  }

  /** Side by side: the base's lines on the left, the branch's on the right; a run of removals faces the additions that replace it. */
  private split(hk: DiffFile["hunks"][number], w: number, tab: number): HTMLElement {
    const m = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(hk.header);
    let old = Number(m?.[1] ?? 0);
    let now = Number(m?.[2] ?? 0);
    const hunk = h("div", { class: "hunk split" }, h("span", { class: "h" }, hk.header));
    const rows: (() => HTMLElement)[] = [];
    let dels: [number, string][] = [];
    let adds: [number, string][] = [];
    const empty = () => this.line("", "e", null, "", tab);
    const flush = () => {
      for (let i = 0; i < Math.max(dels.length, adds.length); i++) {
        const d = dels[i];
        const a = adds[i];
        rows.push(() =>
          h(
            "div",
            { class: "srow" },
            d ? this.line(d[1], "d", `old:${d[0]}`, String(d[0]).padStart(w), tab) : empty(),
            a ? this.line(a[1], "a", `new:${a[0]}`, String(a[0]).padStart(w), tab) : empty(),
          ),
        );
      }
      dels = [];
      adds = [];
    };
    for (const l of hk.lines) {
      const c = l[0];
      if (c === "-") {
        if (adds.length) flush();
        dels.push([old++, l]);
      } else if (c === "+") adds.push([now++, l]);
      else {
        flush();
        if (c === " ") {
          const o = old++;
          const n = now++;
          rows.push(() =>
            h(
              "div",
              { class: "srow" },
              this.line(l, "", `new:${n}`, String(o).padStart(w), tab),
              this.line(l, "", `new:${n}`, String(n).padStart(w), tab),
            ),
          );
        } else rows.push(() => h("div", { class: "srow" }, this.line(l, "h", null, "", tab)));
      }
    }
    flush();
    let block: HTMLElement | null = null;
    rows.forEach((r, j) => {
      if (j % BLOCK === 0) block = this.block(hunk, rows.length - j);
      block!.append(r());
    });
    return hunk;
  }

  private lineOf(target: EventTarget | null): { el: HTMLElement; path: string; side: Side; line: number } | null {
    const el = (target as HTMLElement | null)?.closest?.<HTMLElement>("[data-k]");
    const file = el?.closest<HTMLElement>("[data-file]");
    if (!el || !file) return null;
    const f = this.files[Number(file.dataset.file)];
    const [side, n] = el.dataset.k!.split(":");
    return f ? { el, path: f.path, side: side as Side, line: Number(n) } : null;
  }

  /** Where a line's comment goes: after its line, or after its row side by side. */
  private anchor(el: HTMLElement): HTMLElement {
    return el.closest<HTMLElement>(".srow") ?? el;
  }

  private onClick(e: Event): void {
    if (!this.canComment) return;
    const at = this.lineOf(e.target);
    if (!at) return;
    const k = key(at.path, at.side, at.line);
    const next = this.anchor(at.el).nextElementSibling as HTMLElement | null;
    if (next?.classList.contains("comment-box") && next.dataset.for === k) {
      next.querySelector("textarea")?.focus();
      return;
    }
    const saved = this.comments.get(k);
    if (saved) {
      this.edit(saved);
      return;
    }
    this.openBox(at.el, { path: at.path, side: at.side, line: at.line, text: "" });
  }

  private lineEl(c: Comment): HTMLElement | null {
    const i = this.files.findIndex((f) => f.path === c.path);
    return this.body.querySelector<HTMLElement>(`[data-file="${i}"] [data-k="${c.side}:${c.line}"]`);
  }

  /** The saved comment shown after `c`'s line, if any. */
  private shownAfter(c: Comment, el: HTMLElement): HTMLElement | null {
    const k = key(c.path, c.side, c.line);
    for (
      let n = this.anchor(el).nextElementSibling as HTMLElement | null;
      n?.matches(".comment, .comment-box");
      n = n.nextElementSibling as HTMLElement | null
    )
      if (n.classList.contains("comment") && n.dataset.for === k) return n;
    return null;
  }

  private openBox(lineEl: HTMLElement, c: Comment): void {
    const k = key(c.path, c.side, c.line);
    const text = h("textarea", { rows: "3", "aria-label": `Comment on ${where(c)}` });
    text.value = c.text;
    const box = h(
      "form",
      { class: "comment-box" },
      h("div", { class: "muted" }, `Comment on ${where(c)}`),
      text,
      h("div", {}, h("button", { type: "submit" }, "Add comment"), " ", h("button", { type: "button", "data-cancel": "" }, "Cancel")),
    );
    box.dataset.for = k;
    box.addEventListener("submit", (e) => {
      e.preventDefault();
      box.remove();
      // Emptied: the comment goes.
      if (!text.value.trim()) {
        this.comments.delete(k);
        this.drawBar();
        return;
      }
      const saved = { ...c, text: text.value };
      this.comments.set(k, saved);
      this.placeComment(saved);
      this.drawBar();
    });
    box.querySelector("[data-cancel]")!.addEventListener("click", () => {
      box.remove();
      if (this.comments.has(k)) this.placeComment(this.comments.get(k)!);
    });
    this.anchor(lineEl).after(box);
    text.focus();
  }

  private edit(c: Comment): void {
    const el = this.lineEl(c);
    if (!el) return;
    this.shownAfter(c, el)?.remove();
    this.openBox(el, c);
  }

  /** A saved comment, shown under its line. */
  private placeComment(c: Comment): void {
    const el = this.lineEl(c);
    if (!el) return;
    this.shownAfter(c, el)?.remove();
    const edit = h("button", { type: "button" }, "Edit");
    const remove = h("button", { type: "button" }, "Remove");
    const shown = h("div", { class: "comment" }, h("strong", {}, `${where(c)}: `), c.text, " ", edit, " ", remove);
    shown.dataset.for = key(c.path, c.side, c.line);
    edit.addEventListener("click", (e) => {
      e.stopPropagation();
      shown.remove();
      this.openBox(el, c);
    });
    remove.addEventListener("click", (e) => {
      e.stopPropagation();
      shown.remove();
      this.comments.delete(key(c.path, c.side, c.line));
      this.drawBar();
    });
    this.anchor(el).after(shown);
  }

  /**
   * The bar at the foot of the viewport while the diff is on screen: what a review has so far
   * and Send review (only once there is a comment to send), and Accept and Reject when the task
   * allows them. Nothing to offer (no diff, or a task past review): no bar.
   */
  private drawBar(): void {
    const n = this.comments.size;
    let decides = 0;
    for (const b of this.decide.querySelectorAll<HTMLElement>("[data-verb]")) {
      b.hidden = !this.allowed.has(b.dataset.verb!);
      if (!b.hidden) decides++;
    }
    this.bar.hidden = !this.shown || (!this.canComment && n === 0 && !decides);
    if (this.bar.hidden) {
      this.bar.replaceChildren();
      return;
    }
    const said = h("p", { id: "review-result", role: "status", class: "muted" });
    const parts: Node[] = [];
    if (n) {
      const note = h("textarea", { id: "review-note", rows: "1", "aria-label": "A note after the comments (optional)" });
      const send = h("button", { type: "button", id: "send-review", disabled: !this.canComment }, `Send review (${n})`);
      send.addEventListener("click", () => void this.send(note.value, send, said));
      note.placeholder = "A note after the comments (optional)";
      parts.push(h("span", { class: "muted" }, `${n} comment(s) on the diff.`), note, send);
    } else if (this.canComment) parts.push(h("span", { class: "muted hint" }, "Click a line of the diff to comment on it."));
    this.bar.replaceChildren(...parts, this.decide, said);
  }

  private async send(note: string, button: HTMLButtonElement, said: HTMLElement): Promise<void> {
    button.disabled = true;
    said.className = "muted";
    said.textContent = "Sending the review… (a turn may first build the task's image)";
    try {
      const r = await api<Answers.Review>("POST", `${this.path}/review`, {
        comments: [...this.comments.values()],
        ...(note.trim() ? { message: note } : {}),
      });
      for (const el of this.body.querySelectorAll(".comment")) el.remove();
      this.comments.clear();
      this.drawBar();
      const now = this.bar.querySelector<HTMLElement>("#review-result");
      if (now) now.textContent = `Review sent: ${r.comments} comment(s), as the task's next turn.`;
      this.sent(r);
    } catch (e) {
      said.className = "error";
      said.textContent = (e as Error).message;
      button.disabled = false;
    }
  }
}
