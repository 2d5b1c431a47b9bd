/**
 * The task page's diff as a review (issue 30): files with their counts first, then the hunks
 * with each line numbered; a click (or Enter) on a line opens a comment box under it, and "Send
 * review" sends the comments as the task's next turn (POST /api/tasks/:ref/review, which checks
 * every comment against the diff and refuses them all, with the reasons, if one names a line it
 * does not show). Everything shown is the agent's: text nodes only. A 2,000-line diff renders
 * as one element a line with one listener for all (bench/review.ts).
 */
import type { Answers } from "../../daemon";
import { type Comment, type Side, where } from "../../review";
import { api, h } from "./dom";

/** A task's diff as the API answers it (dashboard/diff.ts). */
export type Diff = Answers.Diff;
export type DiffFile = Diff["files"][number];

/** Lines a layout block holds. */
const BLOCK = 100;

const key = (path: string, side: Side, line: number) => `${side}:${line}\0${path}`;

export class ReviewView {
  /** The comments written so far, by line: kept across reloads of the diff until sent. */
  private comments = new Map<string, Comment>();
  private files: DiffFile[] = [];
  private canComment = false;
  private bar = h("div", { class: "review-bar", hidden: true });
  private body = h("div", {});

  constructor(
    private el: HTMLElement,
    private path: string,
    /** Told when a review was sent (the page shows the task's new state). */
    private sent: (answer: unknown) => void,
  ) {
    this.body.addEventListener("click", (e) => this.onClick(e));
    this.body.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && (e.target as HTMLElement).dataset?.k) this.onClick(e);
    });
  }

  /** Show the diff; `canComment`: the task can take a next turn (a review is one). */
  show(d: Diff, canComment: boolean): void {
    this.files = d.files;
    this.canComment = canComment;
    this.body.replaceChildren(...this.render(d));
    this.el.replaceChildren(this.body, this.bar);
    this.el.classList.remove("muted");
    for (const c of this.comments.values()) this.placeComment(c);
    this.drawBar();
  }

  /** Comments stay possible only while the task can take a turn. */
  setCanComment(can: boolean): void {
    if (can === this.canComment) return;
    this.canComment = can;
    this.body.classList.toggle("commentable", can);
    for (const l of this.body.querySelectorAll<HTMLElement>("[data-k]")) l.tabIndex = can ? 0 : -1;
    this.drawBar();
  }

  private render(d: Diff): Node[] {
    if (!d.files.length) return [h("p", { class: "muted" }, d.note ?? `No changes on ${d.branch}.`)];
    this.body.classList.toggle("commentable", this.canComment);
    const out: Node[] = [
      h(
        "p",
        { class: "muted" },
        `${d.note ? `${d.note} ` : ""}${d.branch}: ${d.files.length} file(s) changed since ${d.base?.slice(0, 10)}${d.cut ? " (the diff is too large to show whole: later files show their counts only)" : ""}`,
      ),
      h(
        "ul",
        { class: "files" },
        ...d.files.map((f, i) =>
          h(
            "li",
            {},
            f.binary ? "bin " : h("span", { class: "plus" }, `+${f.added} `),
            !f.binary && h("span", { class: "minus" }, `−${f.removed} `),
            h("a", { href: `#file-${i}` }, f.path),
          ),
        ),
      ),
    ];
    const tab = this.canComment ? 0 : -1;
    d.files.forEach((f, i) => {
      const hunks: Node[] = [];
      for (const hk of f.hunks) {
        const m = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(hk.header);
        let old = Number(m?.[1] ?? 0);
        let now = Number(m?.[2] ?? 0);
        const hunk = h("div", { class: "hunk" }, h("span", { class: "h" }, hk.header));
        // Lines in blocks the browser lays out only when they come into view (style.css): a
        // 2,000-line diff costs the layout of a screenful.
        let block: HTMLElement | null = null;
        hk.lines.forEach((l, j) => {
          if (j % BLOCK === 0) {
            block = document.createElement("div");
            block.className = "blk";
            block.style.containIntrinsicSize = `auto ${Math.min(BLOCK, hk.lines.length - j) * 1.5}em`;
            hunk.append(block);
          }
          const c = l[0];
          const el = document.createElement("span");
          el.textContent = l || " ";
          if (c === "+" || c === "-" || c === " ") {
            const side = c === "-" ? "old" : "new";
            const n = c === "-" ? old++ : now++;
            if (c === " ") old++;
            if (c !== " ") el.className = c === "+" ? "a" : "d";
            el.dataset.k = `${side}:${n}`;
            el.dataset.n = String(n);
            el.tabIndex = tab;
          } else el.className = "h";
          block!.append(el);
        });
        hunks.push(hunk);
      }
      out.push(
        h(
          "details",
          { class: "file", open: d.files.length <= 20, id: `file-${i}`, "data-file": String(i) },
          h("summary", {}, f.path, " ", f.binary ? "(binary)" : `+${f.added} −${f.removed}`),
          ...hunks,
          !f.hunks.length && !f.binary && h("p", { class: "muted" }, "Hunks not shown (size limit)."),
        ),
      );
    });
    return out;
  }

  private lineOf(target: EventTarget | null): { el: HTMLElement; path: string; side: Side; line: number } | null {
    const el = (target as HTMLElement | null)?.closest?.<HTMLElement>("[data-k]");
    const file = el?.closest<HTMLElement>("[data-file]");
    if (!el || !file) return null;
    const f = this.files[Number(file.dataset.file)];
    const [side, n] = el.dataset.k!.split(":");
    return f ? { el, path: f.path, side: side as Side, line: Number(n) } : null;
  }

  private onClick(e: Event): void {
    if (!this.canComment) return;
    const at = this.lineOf(e.target);
    if (!at) return;
    const k = key(at.path, at.side, at.line);
    const next = at.el.nextElementSibling as HTMLElement | null;
    if (next?.classList.contains("comment-box")) {
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

  private openBox(lineEl: HTMLElement, c: Comment): void {
    const text = h("textarea", { rows: "3", "aria-label": `Comment on ${where(c)}` });
    text.value = c.text;
    const box = h(
      "form",
      { class: "comment-box" },
      h("div", { class: "muted" }, `Comment on ${where(c)}`),
      text,
      h("div", {}, h("button", { type: "submit" }, "Add comment"), " ", h("button", { type: "button", "data-cancel": "" }, "Cancel")),
    );
    box.addEventListener("submit", (e) => {
      e.preventDefault();
      box.remove();
      // Emptied: the comment goes.
      if (!text.value.trim()) {
        this.comments.delete(key(c.path, c.side, c.line));
        this.drawBar();
        return;
      }
      const saved = { ...c, text: text.value };
      this.comments.set(key(c.path, c.side, c.line), saved);
      this.placeComment(saved);
      this.drawBar();
    });
    box.querySelector("[data-cancel]")!.addEventListener("click", () => {
      box.remove();
      if (this.comments.has(key(c.path, c.side, c.line))) this.placeComment(this.comments.get(key(c.path, c.side, c.line))!);
    });
    lineEl.after(box);
    text.focus();
  }

  private edit(c: Comment): void {
    const el = this.lineEl(c);
    if (!el) return;
    if ((el.nextElementSibling as HTMLElement | null)?.classList.contains("comment")) el.nextElementSibling!.remove();
    this.openBox(el, c);
  }

  /** A saved comment, shown under its line. */
  private placeComment(c: Comment): void {
    const el = this.lineEl(c);
    if (!el) return;
    if ((el.nextElementSibling as HTMLElement | null)?.classList.contains("comment")) el.nextElementSibling!.remove();
    const edit = h("button", { type: "button" }, "Edit");
    const remove = h("button", { type: "button" }, "Remove");
    const shown = h("div", { class: "comment" }, h("strong", {}, `${where(c)}: `), c.text, " ", edit, " ", remove);
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
    el.after(shown);
  }

  private drawBar(): void {
    const n = this.comments.size;
    this.bar.hidden = !this.canComment && n === 0;
    if (this.bar.hidden) {
      this.bar.replaceChildren();
      return;
    }
    const note = h("textarea", { id: "review-note", rows: "1", "aria-label": "A note after the comments (optional)" });
    const send = h("button", { type: "button", id: "send-review", disabled: !n || !this.canComment }, `Send review (${n})`);
    const said = h("p", { id: "review-result", role: "status", class: "muted" });
    send.addEventListener("click", () => void this.send(note.value, send, said));
    note.placeholder = "A note after the comments (optional)";
    this.bar.replaceChildren(
      h("span", { class: "muted" }, n ? `${n} comment(s) on the diff.` : "Click a line of the diff to comment on it."),
      n ? note : "",
      send,
      said,
    );
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
