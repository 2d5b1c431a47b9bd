/**
 * The bash completion script: the tree as `case` tables (bash 3.2, macOS's, has no
 * associative arrays) and one function that walks the words typed so far to find the command,
 * skipping flags and their values, and stops at `--` (what follows is a harness's).
 */
import { tables } from "./tables";
import type { Node } from "./tree";

const sq = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** `name() { case "$1" in 'key') REPLY=…;; esac; }` for every key with something to say. */
function table(name: string, rows: [key: string, words: string[]][]): string {
  const cases = rows.filter(([, w]) => w.length).map(([k, w]) => `    ${sq(k)}) REPLY=${sq(w.join(" "))} ;;`);
  return [`${name}() {`, `  REPLY=''`, `  case "$1" in`, ...cases, `  esac`, `}`].join("\n");
}

export function bash(nodes: Node[]): string {
  return `# lazy completion for bash, generated from lazy's commands by \`lazy completion bash\`.
# Use it now: source <(lazy completion bash)
# Keep it: lazy completion bash > ~/.local/share/bash-completion/completions/lazy

${tables(nodes, { prefix: "_lazy", table, described: (name) => name, word: (s) => s })}

# The task codes the command at $1 may name, starting with $2: asked of the project's running
# daemon (lazy never starts one for a TAB). Added to COMPREPLY one by one, never through
# compgen -W, which would expand what it is given; only code-shaped words are taken.
_lazy_codes() {
  local code _
  while IFS=$'\\t' read -r code _; do
    [[ $code =~ ^[a-z0-9][a-z0-9._-]*$ && $code == "$2"* ]] && COMPREPLY+=("$code")
  done < <(command lazy __complete tasks $1 2>/dev/null)
}

_lazy() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" prev="" path="" w i npos=0
  COMPREPLY=()
  for ((i = 1; i < COMP_CWORD; i++)); do
    w="\${COMP_WORDS[i]}"
    [[ $w == -- ]] && return 0
    [[ $w == = ]] && continue
    if [[ $w == -* ]]; then
      _lazy_valued "$path"
      if [[ $w != *=* && " $REPLY " == *" $w "* ]]; then
        ((i++))
        [[ \${COMP_WORDS[i]} == = ]] && ((i++))
      fi
      continue
    fi
    _lazy_subs "$path"
    if [[ " $REPLY " == *" $w "* ]]; then
      path="\${path:+$path }$w"
    else
      ((npos++))
    fi
  done
  # A flag's value: its choices, task codes for --task, else bash's default (file names).
  prev="\${COMP_WORDS[COMP_CWORD - 1]}"
  [[ $prev == = && COMP_CWORD -gt 1 ]] && prev="\${COMP_WORDS[COMP_CWORD - 2]}"
  if [[ $cur != -* && $prev == -* ]]; then
    _lazy_valued "$path"
    if [[ " $REPLY " == *" $prev "* ]]; then
      _lazy_taskflags "$path"
      if [[ " $REPLY " == *" $prev "* ]]; then
        _lazy_codes "$path" "$cur"
        return 0
      fi
      _lazy_choices "\${path:+$path }$prev"
      COMPREPLY=($(compgen -W "$REPLY" -- "$cur"))
      return 0
    fi
  fi
  if [[ $cur == -* ]]; then
    _lazy_flags "$path"
  else
    _lazy_subs "$path"
    local subs="$REPLY"
    _lazy_choices "$path"
    REPLY="$subs $REPLY"
  fi
  COMPREPLY=($(compgen -W "$REPLY" -- "$cur"))
  if [[ $cur != -* ]]; then
    _lazy_taskat "$path"
    [[ -n $REPLY && $REPLY == $((npos + 1)) ]] && _lazy_codes "$path" "$cur"
  fi
}

complete -o default -F _lazy lazy
`;
}
