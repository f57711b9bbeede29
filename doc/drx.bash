# bash completion for drx(1): commands, options, element types, array
# names (NAME.xmd shows as NAME), the dimension names of an array, read
# from `drx info --json`, and its attribute names (`drx attr list`).  Self-contained: needs none of bash-completion's
# helpers, so it also works when sourced on its own.

_drx_commands='init create info extend attr put get address index stripe fsck rm help'
_drx_types='i8 i16 i32 i64 u8 u16 u32 u64 f32 f64 c64 c128'

# Options of a command (all of them when none is known yet).
_drx_options()
{
    case $1 in
    init) echo --stripe-dirs --count --extent ;;
    create) echo --type --shape --chunk --dims --fill ;;
    info) echo --json ;;
    attr) echo --type ;;
    get) echo -o --output ;;
    stripe) echo --count --extent --clear ;;
    fsck) echo --repair ;;
    '') echo --version ;;
    esac
    echo --config --help
}

# Options that take a value (the next word, or after '=').
_drx_takes_value()
{
    case $1 in
    --config | --type | --shape | --chunk | --dims | --fill | --stripe-dirs | --count | \
        --extent | --output | -o) return 0 ;;
    esac
    return 1
}

# One name per line for each dimension of ARRAY: its name, or dimK when
# it has none.  Nothing when ARRAY is not an array.
_drx_dims()
{
    local json line d i=0
    json=$(command drx info --json -- "$1" 2>/dev/null) || return 0
    line=$(printf '%s\n' "$json" | grep '"dims"') || return 0
    line=${line#*[}
    line=${line%]*}
    local IFS=,
    for d in $line; do
        d=${d//[\" ]/}
        if [ -n "$d" ]; then echo "$d"; else echo "dim$i"; fi
        i=$((i + 1))
    done
}

# Arrays (NAME for NAME.xmd) and directories to descend into; quoted by
# readline as file names ("my arr" is one word: -o filenames).
_drx_arrays()
{
    local f
    while IFS= read -r f; do
        if [ -d "$f" ]; then
            COMPREPLY+=("$f/")
        elif [[ $f == *.xmd ]]; then
            COMPREPLY+=("${f%.xmd}")
        fi
    done < <(compgen -f -- "$1")
    compopt -o filenames -o nospace 2>/dev/null
}

# Files (compgen -f or -d, $1) into COMPREPLY, quoted as file names.
_drx_files()
{
    mapfile -t COMPREPLY < <(compgen "$1" -- "$2")
    compopt -o filenames 2>/dev/null
}

_drx()
{
    local cword=$COMP_CWORD cur=${COMP_WORDS[COMP_CWORD]} key='' i w skip=0
    local -a pos=()
    COMPREPLY=()

    # bash splits "--type=f6" and "order=F" at '=' (it is in
    # COMP_WORDBREAKS): "--type" "=" "f6".  key is the word before the
    # '=' when the cursor is on a value.
    if [ "$cur" = '=' ]; then
        key=${COMP_WORDS[cword - 1]}
        cur=''
    elif [ "$cword" -ge 2 ] && [ "${COMP_WORDS[cword - 1]}" = '=' ]; then
        key=${COMP_WORDS[cword - 2]}
    elif [ "$cword" -ge 1 ] && _drx_takes_value "${COMP_WORDS[cword - 1]}"; then
        key=${COMP_WORDS[cword - 1]}
    fi

    # The positional words before the cursor: the command, then its
    # arguments; options and their values are skipped.
    for ((i = 1; i < cword; i++)); do
        w=${COMP_WORDS[i]}
        if [ "$skip" -gt 0 ]; then
            skip=$((skip - 1))
            [ "$w" = '=' ] && skip=1
            continue
        fi
        if [ "$w" = '=' ]; then
            skip=1 # the value of a view word, already counted with its key
            continue
        fi
        if [[ $w == -* ]]; then
            _drx_takes_value "$w" && skip=1
            continue
        fi
        pos+=("$w")
    done
    local cmd=${pos[0]:-} n=${#pos[@]} array=${pos[1]:-}

    if _drx_takes_value "$key"; then
        case $key in
        --type)
            local types=$_drx_types
            [ "$cmd" = attr ] && types="string $types"
            mapfile -t COMPREPLY < <(compgen -W "$types" -- "$cur")
            ;;
        --config | --output | -o) _drx_files -f "$cur" ;;
        --stripe-dirs) _drx_files -d "$cur" ;;
        esac
        return 0
    fi
    if [[ $cur == -* ]]; then
        mapfile -t COMPREPLY < <(compgen -W "$(_drx_options "$cmd")" -- "$cur")
        return 0
    fi
    if [ "$n" -eq 0 ] || { [ "$cmd" = help ] && [ "$n" -eq 1 ]; }; then
        mapfile -t COMPREPLY < <(compgen -W "$_drx_commands" -- "$cur")
        return 0
    fi
    case $cmd in
    init | fsck)
        _drx_files -d "$cur"
        ;;
    stripe)
        if [ "$n" -eq 1 ]; then
            mapfile -t COMPREPLY < <(compgen -W 'get set' -- "$cur")
        else
            _drx_files -f "$cur"
        fi
        ;;
    create)
        [ "$n" -eq 1 ] && _drx_files -f "$cur"
        ;;
    info | rm | address | index)
        [ "$n" -eq 1 ] && _drx_arrays "$cur"
        ;;
    extend)
        if [ "$n" -eq 1 ]; then
            _drx_arrays "$cur"
        elif [ "$n" -eq 2 ]; then
            mapfile -t COMPREPLY < <(compgen -W "$(_drx_dims "$array")" -- "$cur")
        fi
        ;;
    attr)
        if [ "$n" -eq 1 ]; then
            mapfile -t COMPREPLY < <(compgen -W 'set get rm list' -- "$cur")
        elif [ "$n" -eq 2 ]; then
            _drx_arrays "$cur"
        elif [ "$n" -eq 3 ] && [ "${pos[1]}" != list ]; then
            # the array's attribute names, for get, rm and set (replace)
            mapfile -t COMPREPLY < <(compgen -W "$(command drx attr list -- "${pos[2]}" 2>/dev/null |
                cut -d' ' -f1)" -- "$cur")
        fi
        ;;
    get | put)
        if [ "$n" -eq 1 ]; then
            _drx_arrays "$cur"
        elif [ -n "$key" ]; then
            # the value of a view word: order and rep have fixed ones
            case $key in
            order) mapfile -t COMPREPLY < <(compgen -W 'C F' -- "$cur") ;;
            rep) mapfile -t COMPREPLY < <(compgen -W 'native external32' -- "$cur") ;;
            esac
        else
            local words='order= rep=' d
            while IFS= read -r d; do words+=" $d="; done < <(_drx_dims "$array")
            mapfile -t COMPREPLY < <(compgen -W "$words" -- "$cur")
            compopt -o nospace 2>/dev/null
        fi
        ;;
    esac
    return 0
}

complete -F _drx drx
