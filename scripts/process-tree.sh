# Sourced (bash): the processes of a tree, read once from the process table.
#   with_descendants PID...   prints each PID and every process below it
with_descendants() {
  ps -e -o pid=,ppid= | awk -v roots="$*" '
    { children[$2] = children[$2] " " $1 }
    END {
      n = split(roots, todo, " ")
      for (i = 1; i <= n; i++) {
        print todo[i]
        m = split(children[todo[i]], below, " ")
        for (j = 1; j <= m; j++) todo[++n] = below[j]
      }
    }'
}
