# The version a build answers to --version: `git describe` of the tree (a tag, commits since
# it, the commit, "-dirty" for uncommitted changes), or an honest "unknown" outside git.
# Sourced by scripts/install and scripts/package.
vpnexec_version() {
  git -C "$(dirname "${BASH_SOURCE[0]}")/../.." describe --tags --always --dirty 2>/dev/null || echo "0.0.0-dev (unknown commit)"
}
