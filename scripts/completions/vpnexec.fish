# fish completion for vpnexec: its options, the profiles the caller may use (vpnd answers
# `vpnctl profiles --names`, on the --socket given), then the command with its own completion.

# The words before the cursor, read as vpnexec reads them: options until "--" or the first
# word that is not one; -p, --profile and --socket take the next word. Prints, for PART:
# socket, the --socket given; state, where the cursor is: "options" (vpnexec's), "value" (of
# the option before it) or "command"; command, the command's words before the cursor.
function __vpnexec_words --argument-names part
    set -l tokens (commandline -opc)
    set -e tokens[1]
    set -l socket
    set -l state options
    while set -q tokens[1]
        switch $tokens[1]
            case --
                set -e tokens[1]
                set state command
                break
            case -p --profile --socket
                if not set -q tokens[2]
                    set state value
                    break
                end
                test $tokens[1] = --socket; and set socket $tokens[2]
                set -e tokens[1]
                set -e tokens[1]
            case '--socket=*'
                set socket (string replace -- --socket= '' $tokens[1])
                set -e tokens[1]
            case '-*'
                set -e tokens[1]
            case '*'
                set state command
                break
        end
    end
    switch $part
        case socket
            set -q socket[1]; and printf '%s\n' $socket
        case command
            test $state = command; and set -q tokens[1]; and printf '%s\n' $tokens
        case state
            printf '%s\n' $state
    end
end

# Profile names from the vpnd this command line would ask.
function __vpnexec_profiles
    set -l socket (__vpnexec_words socket)
    if set -q socket[1]
        vpnctl profiles --names --socket $socket 2>/dev/null
    else
        vpnctl profiles --names 2>/dev/null
    end
end

# The command and its arguments, completed as if typed alone (fish's own completions for it).
function __vpnexec_complete_command
    set -l state (__vpnexec_words state)
    test $state = value; and return
    set -l words (__vpnexec_words command)
    set -l current (commandline -ct)
    # Before the command: only a word that is not an option names one.
    if test $state = options; and string match -q -- '-*' $current
        return
    end
    complete -C (string join ' ' -- (string escape -- $words) $current)
end

# vpnexec's options only before the command; the profile's value is a separate word
# (`-p work`, an old-style option to fish), never `-pwork`.
complete -c vpnexec -f
complete -c vpnexec -n 'test (__vpnexec_words state) != command' -o p -l profile -x -a '(__vpnexec_profiles)' -d 'the profile to run in'
complete -c vpnexec -n 'test (__vpnexec_words state) = options' -l bypass -d 'run outside every profile'
complete -c vpnexec -n 'test (__vpnexec_words state) = options' -l socket -r -F -d "vpnd's control socket"
complete -c vpnexec -n 'test (__vpnexec_words state) = options' -l version -d 'show the version'
complete -c vpnexec -n 'test (__vpnexec_words state) = options' -s h -l help -d 'show help'
complete -c vpnexec -x -a '(__vpnexec_complete_command)'
