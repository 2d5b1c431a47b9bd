/**
 * The zsh completion script: the same walk as bash's over the same tables, with each
 * command's and flag's description shown beside it. Works from fpath (as `_lazy`) or sourced
 * after compinit.
 */
import { tables } from "./tables";
import type { Node } from "./tree";

const sq = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
// _describe splits "name:description" at the first unescaped colon.
const described = (name: string, description: string) => sq(`${name.replace(/:/g, "\\:")}:${description}`);

function table(name: string, rows: [key: string, words: string[]][]): string {
  const cases = rows.filter(([, w]) => w.length).map(([k, w]) => `    (${sq(k)}) reply=(${w.join(" ")}) ;;`);
  return [`${name}() {`, `  reply=()`, `  case $1 in`, ...cases, `  esac`, `}`].join("\n");
}

export function zsh(nodes: Node[]): string {
  return `#compdef lazy
# lazy completion for zsh, generated from lazy's commands by \`lazy completion zsh\`.
# Use it now (after compinit): source <(lazy completion zsh)
# Keep it: lazy completion zsh > "\${fpath[1]}/_lazy"

${tables(nodes, { prefix: "_lazy", table, described: described, word: sq })}

# "code:status" for the task codes the command at $1 may name, asked of the project's running
# daemon (lazy never starts one for a TAB); only code-shaped words are taken.
_lazy_codes() {
  local line code
  local -a found
  for line in \${(f)"$(command lazy __complete tasks \${=1} 2>/dev/null)"}; do
    code=\${line%%$'\\t'*}
    [[ $code =~ '^[a-z0-9][a-z0-9._-]*$' ]] && found+=("$code:\${line#*$'\\t'}")
  done
  reply=("\${found[@]}")
}

_lazy() {
  local cmdpath='' w prev i npos=0
  local -a reply cands names
  for (( i = 2; i < CURRENT; i++ )); do
    w=\${words[i]}
    [[ $w == -- ]] && return 0
    if [[ $w == -* ]]; then
      _lazy_valued "$cmdpath"
      [[ $w != *=* ]] && (( \${reply[(Ie)$w]} )) && (( i++ ))
      continue
    fi
    _lazy_subs "$cmdpath"
    names=(\${reply%%:*})
    if (( \${names[(Ie)$w]} )); then
      cmdpath=\${cmdpath:+$cmdpath }$w
    else
      (( npos++ ))
    fi
  done
  prev=\${words[CURRENT-1]}
  if (( CURRENT > 2 )) && [[ $prev == -* ]]; then
    _lazy_valued "$cmdpath"
    if (( \${reply[(Ie)$prev]} )); then
      _lazy_taskflags "$cmdpath"
      if (( \${reply[(Ie)$prev]} )); then
        _lazy_codes "$cmdpath"
        cands=("\${reply[@]}")
        (( $#cands )) && _describe -t tasks 'lazy task' cands
        return
      fi
      _lazy_choices "\${cmdpath:+$cmdpath }$prev"
      if (( $#reply )); then compadd -a reply; else _files; fi
      return
    fi
  fi
  if [[ \${words[CURRENT]} == -* ]]; then
    _lazy_flags "$cmdpath"
    cands=("\${reply[@]}")
    _describe -t options 'lazy option' cands
    return
  fi
  _lazy_subs "$cmdpath"
  cands=("\${reply[@]}")
  _lazy_choices "$cmdpath"
  cands+=("\${reply[@]}")
  _lazy_taskat "$cmdpath"
  if (( $#reply )) && [[ \${reply[1]} == $(( npos + 1 )) ]]; then
    _lazy_codes "$cmdpath"
    cands+=("\${reply[@]}")
  fi
  if (( $#cands )); then _describe -t commands 'lazy command' cands; else _files; fi
}

if [[ \${funcstack[1]} == _lazy ]]; then
  _lazy "$@"
elif (( \${+functions[compdef]} )); then
  compdef _lazy lazy
fi
`;
}
