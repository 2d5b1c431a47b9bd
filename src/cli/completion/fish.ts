/**
 * The fish completion script: the same walk as bash's over the same tables, each candidate
 * with its description (fish shows "name<TAB>description").
 */
import { tables } from "./tables";
import type { Node } from "./tree";

// In fish's single quotes only \\ and \' are escapes.
const sq = (s: string) => `'${s.replace(/[\\']/g, (c) => `\\${c}`)}'`;

function table(name: string, rows: [key: string, words: string[]][]): string {
  const cases = rows.filter(([, w]) => w.length).map(([k, w]) => `    case ${sq(k)}\n      printf '%s\\n' ${w.join(" ")}`);
  return [`function ${name}`, `  switch "$argv[1]"`, ...cases, `  end`, `end`].join("\n");
}

export function fish(nodes: Node[]): string {
  const tabbed = (name: string, description: string) => sq(description ? `${name}\t${description}` : name);
  return `# lazy completion for fish, generated from lazy's commands by \`lazy completion fish\`.
# Use it now: lazy completion fish | source
# Keep it: lazy completion fish > ~/.config/fish/completions/lazy.fish

${tables(nodes, { prefix: "__lazy", table, described: tabbed, word: sq })}

# "code<TAB>status" for the task codes the command at $argv[1] may name, asked of the project's
# running daemon (lazy never starts one for a TAB); only code-shaped words are taken.
function __lazy_codes
  command lazy __complete tasks (string split ' ' -- $argv[1]) 2>/dev/null | string match -r '^[a-z0-9][a-z0-9._-]*\t[a-z]+$'
end

function __lazy_complete
  set -l tokens (commandline -opc)
  set -e tokens[1]
  set -l cur (commandline -ct)
  set -l cmdpath ''
  set -l value 0
  set -l npos 0
  for w in $tokens
    if test $value = 1
      set value 0
      continue
    end
    test "$w" = '--'; and return
    if string match -q -- '-*' $w
      if not string match -q -- '*=*' $w; and contains -- $w (__lazy_valued "$cmdpath")
        set value 1
      end
      continue
    end
    if contains -- $w (__lazy_subs "$cmdpath" | string replace -r '\t.*' '')
      if test -z "$cmdpath"
        set cmdpath $w
      else
        set cmdpath "$cmdpath $w"
      end
    else
      set npos (math $npos + 1)
    end
  end
  if test $value = 1
    set -l key $tokens[-1]
    if contains -- $key (__lazy_taskflags "$cmdpath")
      __lazy_codes "$cmdpath"
      return
    end
    test -n "$cmdpath"; and set key "$cmdpath $key"
    set -l choices (__lazy_choices "$key")
    if test (count $choices) -gt 0
      printf '%s\n' $choices
    else
      __fish_complete_path $cur
    end
    return
  end
  if string match -q -- '-*' $cur
    __lazy_flags "$cmdpath"
    return
  end
  __lazy_subs "$cmdpath"
  __lazy_choices "$cmdpath"
  # (command substitution in quotes, "$(…)", needs fish 3.4: Ubuntu 22.04 has 3.3)
  set -l at (__lazy_taskat "$cmdpath")
  if test -n "$at"; and test "$at" = (math $npos + 1)
    __lazy_codes "$cmdpath"
  end
end

complete -c lazy -e
complete -c lazy -f -a '(__lazy_complete)'
`;
}
