# What the bench scripts share: the checks before they start (each a
# one-line error and exit 1) and the flags of a timed `distrun bench` band.
# Source it: . "$(dirname "$0")/checks.sh"

# need_built BUILD_DIR PROGRAM...: each program is built in BUILD_DIR/bin.
need_built() {
  local build=$1 program
  shift
  for program; do
    [[ -x $build/bin/$program ]] || { echo "build first: cmake --build $build" >&2; exit 1; }
  done
}

# need_mnist DIR: DIR/MNIST/raw holds the digits (scripts/prepare-mnist).
need_mnist() {
  [[ -f $1/MNIST/raw/train-images-idx3-ubyte ]] || {
    echo "no MNIST under $1: run scripts/prepare-mnist" >&2; exit 1; }
}

# need_torch PYTHON: PYTHON imports torch.distributed.
need_torch() {
  "$1" -c 'import torch.distributed' 2>/dev/null || {
    echo "$1 has no torch: scripts/install-deps" >&2; exit 1; }
}

# bench_band WARMUP ITERS SIZE...: the `distrun bench` flags that time ITERS
# calls (after WARMUP) at each size from the first SIZE to the last, x4, as
# CSV, with the slowest rank's time (-a 3), as the peers' loops report theirs.
bench_band() {
  local warmup=$1 n=$2
  shift 2
  echo "-b $1 -e ${*: -1} -f 4 -n $n -w $warmup -c 0 -a 3 --format csv"
}
