# shellcheck shell=bash
# Sourced by scripts/make-man-pages and scripts/check-man-pages: the one
# reading of the command list that `distrun --help` prints.
# distrun_commands DISTRUN: the commands, as "NAME<TAB>DESCRIPTION" lines.
distrun_commands() {
  "$1" --help |
    sed -n '/^Subcommands:/,$p' | sed -n 's/^  \([a-z][a-z-]*\)  *\(.*\)$/\1\t\2/p'
}
