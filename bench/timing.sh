# Timing helpers the container benches share (sourced, not run):
#   time_median COUNT COLD CMD...  median ns of COUNT runs of CMD (output
#                                  dropped; a failing run ends the bench),
#                                  the page cache dropped before each when
#                                  COLD=1 (root only)
#   ms NS, mb BYTES                a duration in ms, a size in MB, padded
now() { date +%s%N; }
median() { sort -n | awk '{v[NR]=$1} END{print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }
drop_caches() { sync; echo 3 >/proc/sys/vm/drop_caches; }
ms() { awk -v ns="$1" 'BEGIN{printf "%9.1f ms", ns/1e6}'; }
mb() { awk -v b="$1" 'BEGIN{printf "%9.0f MB", b/1e6}'; }
time_median() {
  local count=$1 cold=$2; shift 2
  for ((i = 0; i < count; i++)); do
    [[ $cold == 1 ]] && drop_caches
    local t0; t0=$(now)
    "$@" >/dev/null 2>&1 || { echo "failed: $*" >&2; exit 1; }
    echo $(( $(now) - t0 ))
  done | median
}
