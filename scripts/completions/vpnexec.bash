# bash completion for vpnexec: its options, the profiles the caller may use (vpnd answers
# `vpnctl profiles --names`, on the --socket given), then the command, completed as if typed
# alone.
_vpnexec() {
    local cur=${COMP_WORDS[COMP_CWORD]} i word option= command=false socket=()
    COMPREPLY=()
    # vpnexec's options, read as vpnexec reads them: until "--" or the first word that is not
    # one; -p, --profile and --socket take the next word, or (long) the one after "=", which
    # bash makes a word of its own (COMP_WORDBREAKS): "--socket", "=", "PATH".
    for ((i = 1; i < COMP_CWORD; i++)); do
        word=${COMP_WORDS[i]}
        if [[ $word == --* && ${COMP_WORDS[i+1]} == = ]]; then
            if ((i + 2 >= COMP_CWORD)); then option=$word; break; fi
            [[ $word == --socket ]] && socket=(--socket "${COMP_WORDS[i+2]}")
            ((i += 2))
            continue
        fi
        case $word in
            -p|--profile|--socket)
                if ((i + 1 == COMP_CWORD)); then option=$word; break; fi
                [[ $word == --socket ]] && socket=(--socket "${COMP_WORDS[i+1]}")
                ((i++)) ;;
            --) ((i++)); command=true; break ;;
            -*) ;;
            *) command=true; break ;;
        esac
    done
    if [[ -n $option ]]; then
        # On the "=" itself, readline completes the empty word after it.
        [[ $cur == = ]] && cur=
        case $option in
            --socket)
                compopt -o filenames 2>/dev/null
                mapfile -t COMPREPLY < <(compgen -f -- "$cur") ;;
            -p|--profile)
                mapfile -t COMPREPLY < <(compgen -W "$(vpnctl profiles --names "${socket[@]}" 2>/dev/null)" -- "$cur") ;;
        esac
        return 0
    fi
    if $command || [[ $cur != -* ]]; then
        # The command (bash-completion completes its arguments by its own rules).
        if declare -F _command_offset >/dev/null; then
            _command_offset "$i"
        elif ((i == COMP_CWORD)); then
            mapfile -t COMPREPLY < <(compgen -c -- "$cur")
        fi
        return 0
    fi
    mapfile -t COMPREPLY < <(compgen -W "-p --profile --bypass --socket --version --help --" -- "$cur")
}
complete -F _vpnexec vpnexec
