/**
 * Driving the shells lazy writes completion scripts for, as the completion tests do: whether a
 * shell is installed, and zsh's completion run without a terminal (compsys needs one, so its
 * builtins are stood in for by functions that print what they are offered).
 */

/** Whether `bin` is on PATH. */
export const has = (bin: string) => Bun.spawnSync(["sh", "-c", `command -v ${bin}`]).exitCode === 0;

/**
 * A `zsh -c` program that sources the completion script at `script` and completes each of
 * `typed` (the words as typed, the last one being completed: `lazy task ''`). Each prints
 * `== WORDS` and then one offer a line (`name:description` where there is one; FILES for files).
 */
export const zshCompleting = (script: string, ...typed: string[]) =>
  [
    `_describe() { print -rl -- "\${(@P)\${@[-1]}}"; }`,
    `compadd() { print -rl -- "\${(@P)\${@[-1]}}"; }`,
    "_files() { print FILES; }",
    `source ${script}`,
    't() { words=("$@"); CURRENT=$#words; print -- "== $*"; _lazy; }',
    ...typed.map((t) => `t ${t}`),
  ].join("\n");
