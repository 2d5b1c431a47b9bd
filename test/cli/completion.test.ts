/**
 * `lazy completion bash|zsh|fish`: scripts generated from the command tree, driven the way
 * each shell drives them (bash: the function `complete -p lazy` names, with COMP_WORDS set;
 * fish: `complete -C`; zsh: the function with `words`/CURRENT set and compsys's builtins
 * stood in for, since compsys needs a terminal).
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cleanupAll, Project } from "../helpers/lazy";
import { has, zshCompleting } from "../helpers/shells";

afterAll(cleanupAll);

async function sh(argv: string[], stdin?: string): Promise<{ code: number; out: string; err: string }> {
  const p = Bun.spawn(argv, { stdin: stdin === undefined ? "ignore" : new Blob([stdin]), stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, out, err };
}

const SCRIPT = "/dev/stdin";

describe("lazy completion", () => {
  test("bash: lazy ta<TAB> completes to task, lazy task <TAB> to its subcommands", async () => {
    const p = new Project();
    const script = (await p.ok(["completion", "bash"])).stdout;
    const r = await sh(
      [
        "bash",
        "-c",
        `source ${SCRIPT}
fn=$(complete -p lazy | sed -E 's/.* -F ([^ ]+) .*/\\1/')
echo "fn=$fn"
t() { COMP_WORDS=("$@"); COMP_CWORD=$((\${#COMP_WORDS[@]} - 1)); COMPREPLY=(); "$fn"; echo "$*|\${COMPREPLY[*]}"; }
t lazy ta
t lazy task ''
t lazy d
t lazy stats audit -
t lazy stats audit --task ta ''
t lazy completion ''
t lazy run -- ta`,
      ],
      script,
    );
    expect(r.err).toBe("");
    const lines = r.out.trim().split("\n");
    expect(lines[0]).toBe("fn=_lazy");
    expect(lines.slice(1)).toEqual([
      "lazy ta|task",
      "lazy task |add list show budget",
      "lazy d|daemon doctor dashboard diff",
      // Flags come from the definitions: stats audit's own, then lazy's --help.
      "lazy stats audit -|--task --limit --json --help -h",
      // A flag's value is not read as a subcommand.
      "lazy stats audit --task ta |",
      "lazy completion |bash zsh fish",
      // After -- the words are a harness's.
      "lazy run -- ta|",
    ]);
  });

  test("the scripts follow the command tree: hidden commands stay out", async () => {
    const p = new Project();
    const bash = (await p.ok(["completion", "bash"])).stdout;
    // supervise and daemon run are hidden: lazy starts them, people do not type them.
    expect(bash).not.toContain("supervise");
    expect(bash).toMatch(/'daemon'\) REPLY='status logs start stop restart install uninstall' ;;/);
    expect(bash).not.toContain("\x1b");
  });

  test.skipIf(!has("zsh"))("zsh: the script parses, and completes from the same tree with descriptions", async () => {
    const p = new Project();
    const script = (await p.ok(["completion", "zsh"])).stdout;
    expect(script.startsWith("#compdef lazy\n")).toBe(true);
    const parsed = await sh(["zsh", "-n", SCRIPT], script);
    expect(parsed).toMatchObject({ code: 0, err: "" });
    const r = await sh(["zsh", "-c", zshCompleting(SCRIPT, "lazy task ''", "lazy completion ''", "lazy stats audit --limit ''")], script);
    expect(r.err).toBe("");
    expect(r.out).toContain("== lazy task \nadd:Add a task\nlist:List tasks\nshow:Show a task and its events\n");
    expect(r.out).toContain("== lazy completion \nbash\nzsh\nfish\n");
    expect(r.out).toContain("== lazy stats audit --limit \nFILES\n");
  });

  test.skipIf(!has("zsh"))("zsh, interactive with compinit: typing lazy ta<TAB>li<TAB><Enter> runs lazy task list", async () => {
    const p = new Project();
    const dir = mkdtempSync(join(tmpdir(), "lazy-zsh-"));
    try {
      writeFileSync(join(dir, "_lazy"), (await p.ok(["completion", "zsh"])).stdout);
      // zsh's own pty module plays the person at the keyboard; the stand-in lazy records its words.
      writeFileSync(
        join(dir, "drive.zsh"),
        `zmodload zsh/zpty
zpty z 'zsh -f -i'
zpty -w z 'lazy() { print -r -- "$*" > ${dir}/ran; }; autoload -U compinit; compinit -u -D; source ${dir}/_lazy'
sleep 1
zpty -w -n z $'lazy ta\\t'
sleep 1
zpty -w -n z $'li\\t'
sleep 1
zpty -w -n z $'\\r'
for i in {1..50}; do [[ -s ${dir}/ran ]] && break; sleep 0.1; done
zpty -d z
`,
      );
      await sh(["timeout", "30", "zsh", "-f", join(dir, "drive.zsh")]);
      expect(readFileSync(join(dir, "ran"), "utf8")).toBe("task list\n");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test.skipIf(!has("fish"))("fish: the script parses, and complete -C completes lazy ta to task", async () => {
    const p = new Project();
    const script = (await p.ok(["completion", "fish"])).stdout;
    expect(await sh(["fish", "-n", SCRIPT], script)).toMatchObject({ code: 0, err: "" });
    const r = await sh(
      ["fish", "-c", `source ${SCRIPT}; complete -C'lazy ta'; echo ==; complete -C'lazy task '; echo ==; complete -C'lazy completion '`],
      script,
    );
    expect(r.err).toBe("");
    const [ta, task, shells] = r.out.split("==\n");
    expect(ta).toBe("task\tAdd, list and show tasks, and raise a task's budget\n");
    expect(
      task!
        .split("\n")
        .filter(Boolean)
        .map((l) => l.split("\t")[0])
        .sort(),
    ).toEqual(["add", "budget", "list", "show"]);
    expect(task).toContain("add\tAdd a task\nbudget\tRaise a task's budget");
    expect(shells!.trim().split("\n").sort()).toEqual(["bash", "fish", "zsh"]);
  });

  test("an unknown shell is a usage error naming the ones there are", async () => {
    const p = new Project();
    const r = await p.run(["completion", "tcsh"]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain('lazy completion: unknown shell "tcsh"; one of bash, zsh, fish');
  });
});
