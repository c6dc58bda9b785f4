# fish completion for vpnexec: its options, the profiles the caller may use (vpnd answers
# `vpnctl profiles --names`), then the command with its own completion.
complete -c vpnexec -s p -l profile -x -a '(vpnctl profiles --names 2>/dev/null)' -d 'the profile to run in'
complete -c vpnexec -l bypass -d 'run outside every profile'
complete -c vpnexec -l socket -r -F -d "vpnd's control socket"
complete -c vpnexec -l version -d 'show the version'
complete -c vpnexec -s h -l help -d 'show help'
complete -c vpnexec -x -a '(__fish_complete_subcommand)'
