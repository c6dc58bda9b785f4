# bash completion for vpnexec: its options, the profiles the caller may use (vpnd answers
# `vpnctl profiles --names`), then the command, completed as if typed alone.
_vpnexec() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} i socket=()
    COMPREPLY=()
    for ((i = 1; i < COMP_CWORD; i++)); do
        case ${COMP_WORDS[i]} in
            --socket) socket=(--socket "${COMP_WORDS[i+1]}"); ((i++)) ;;
            --socket=*) socket=("${COMP_WORDS[i]}") ;;
            -p|--profile) ((i++)) ;;
            --) ((i++)); break ;;
            -*) ;;
            *) break ;;
        esac
    done
    if ((i < COMP_CWORD)); then
        declare -F _command_offset >/dev/null && _command_offset "$i"
        return 0
    fi
    case $prev in
        -p|--profile)
            mapfile -t COMPREPLY < <(compgen -W "$(vpnctl profiles --names "${socket[@]}" 2>/dev/null)" -- "$cur")
            return 0 ;;
        --socket)
            mapfile -t COMPREPLY < <(compgen -f -- "$cur")
            return 0 ;;
    esac
    if [[ $cur == -* ]]; then
        mapfile -t COMPREPLY < <(compgen -W "-p --profile --bypass --socket --version --help --" -- "$cur")
    else
        mapfile -t COMPREPLY < <(compgen -c -- "$cur")
    fi
}
complete -F _vpnexec vpnexec
