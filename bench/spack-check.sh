#!/usr/bin/env bash
# Runs the real Spack on distrun's recipe (packaging/spack), offline: Spack's
# concretizer picks the DAG, `spack install` builds this tree with Spack's
# compiler wrapper against Debian's libraries (declared as externals), and
# `spack test run distrun` runs the recipe's smoke tests on the install.
# Then the variants: distrun~mpi~train must need neither MPI nor py-torch,
# and distrun+nccl must depend on cuda and nccl. Not part of CI:
# Spack is not in Debian and CI cannot fetch it (docs/install.md gives the
# last run's output and how to get what it needs).
#   bench/spack-check.sh SPACK_DIR PACKAGES_DIR [SOURCES_DIR]
# SPACK_DIR is a Spack checkout (1.0 or newer), PACKAGES_DIR a spack-packages
# checkout (its builtin repository), SOURCES_DIR a folder of the source
# tarballs Spack would download (compiler-wrapper's): each is offered by its
# sha256, so Spack still checks it against its recipe's checksum. clingo's
# Python module must be importable (PYTHONPATH), else Spack would download
# it. Spack's configuration, caches and install tree live in a scratch
# folder removed at the end: nothing in ~/.spack is read or written.
set -euo pipefail
usage="usage: bench/spack-check.sh SPACK_DIR PACKAGES_DIR [SOURCES_DIR]"
source=$(cd "$(dirname "$0")/.." && pwd)
spack_bin=$(cd "${1:?$usage}" && pwd)/bin/spack
builtin=$(cd "${2:?$usage}" && pwd)/repos/spack_repo/builtin
sources=${3:+$(cd "$3" && pwd)}

say() { echo "spack-check: $*"; }
fail() {
  echo "spack-check: $*" >&2
  exit 1
}
[[ -x $spack_bin ]] || fail "$1: no bin/spack there; expected a Spack checkout"
[[ -f $builtin/repo.yaml ]] ||
  fail "$2: no repos/spack_repo/builtin/repo.yaml there; expected a spack-packages checkout"
python3 -c 'import clingo' 2>/dev/null ||
  fail "clingo's Python module is not importable: Spack would download it to concretize; put clingo 5.5 or newer on PYTHONPATH (docs/install.md, Spack)"

scratch=$(mktemp -d "${TMPDIR:-/var/tmp}/distrun-spack-check.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
export SPACK_USER_CONFIG_PATH=$scratch/user SPACK_USER_CACHE_PATH=$scratch/user-cache
export SPACK_DISABLE_LOCAL_CONFIG=1
spack() { "$spack_bin" -e "$scratch/env" "$@"; }

# The tree as it is now, tracked and new files, as the source Spack builds.
copy_tree() {
  mkdir -p "$scratch/src"
  git -C "$source" ls-files -z --cached --others --exclude-standard |
    (cd "$source" && xargs -0 tar -cf - --no-recursion --ignore-failed-read) |
    tar -xf - -C "$scratch/src"
}

# A Debian package's upstream version: no epoch, no Debian revision, no
# +ds/.dfsg repacking suffix (1:1.2.13.dfsg-1 -> 1.2.13).
upstream() {
  dpkg-query -W -f='${Version}' "$1" | sed -E 's/^[0-9]+://; s/[-+~].*$//; s/\.dfsg.*$//'
}

# gloo has no releases: Spack names its versions by date, Debian by the
# snapshot's (0.0~git20220518.5b14351-3 -> 2022-05-18).
gloo_version() {
  dpkg-query -W -f='${Version}' libgloo-dev |
    sed -E 's/.*git([0-9]{4})([0-9]{2})([0-9]{2}).*/\1-\2-\3/'
}

external() { # NAME SPEC: Debian's NAME under /usr, never built by Spack
  printf '    %s: {externals: [{spec: "%s", prefix: /usr}], buildable: false}\n' "$1" "$2"
}

write_environment() {
  local gcc
  gcc=$(gcc -dumpfullversion)
  mkdir -p "$scratch/env" "$scratch/mirror"
  {
    cat <<EOF
spack:
  specs: [distrun@main +mpi +train]
  develop:
    distrun: {spec: distrun@main, path: $scratch/src}
  view: false
  concretizer: {unify: true, reuse: false}
  repos:
    distrun: $source/packaging/spack/spack_repo/distrun
    builtin: $builtin
  mirrors: {offline: file://$scratch/mirror}
  config:
    install_tree: {root: $scratch/opt}
    build_stage: [$scratch/stage]
    test_stage: $scratch/test-stage
    source_cache: $scratch/cache/source
    misc_cache: $scratch/cache/misc
    build_jobs: $(nproc)
  packages:
    gcc:
      buildable: false
      externals:
      - spec: gcc@$gcc languages:='c,c++'
        prefix: /usr
        extra_attributes: {compilers: {c: /usr/bin/gcc, cxx: /usr/bin/g++}}
EOF
    external cmake "cmake@$(upstream cmake)"
    external gmake "gmake@$(upstream make)"
    external pkgconf "pkgconf@$(upstream pkgconf)"
    external help2man "help2man@$(upstream help2man)"
    external cli11 "cli11@$(upstream libcli11-dev)"
    external fmt "fmt@$(upstream libfmt-dev)"
    external gloo "gloo@$(gloo_version)"
    external hwloc "hwloc@$(upstream libhwloc-dev)"
    external nlohmann-json "nlohmann-json@$(upstream nlohmann-json3-dev)"
    external zlib "zlib@$(upstream zlib1g-dev)"
    external openmpi "openmpi@$(upstream libopenmpi-dev)"
    external googletest "googletest@$(upstream googletest)"
    external python "python@$(upstream python3)"
    # Debian's torch is built for the CPU only.
    external py-torch "py-torch@$(upstream libtorch-dev)~cuda~cudnn~nccl~rocm ^python@$(upstream python3)"
  } >"$scratch/env/spack.yaml"
}

# Offers each tarball of SOURCES_DIR where Spack looks up a
# source by its checksum.
fill_mirror() {
  local tarball sum
  [[ -n $sources ]] || return 0
  for tarball in "$sources"/*.tar.gz; do
    [[ -f $tarball ]] || continue
    sum=$(sha256sum "$tarball" | cut -d' ' -f1)
    mkdir -p "$scratch/mirror/_source-cache/archive/${sum:0:2}"
    cp "$tarball" "$scratch/mirror/_source-cache/archive/${sum:0:2}/$sum.tar.gz"
  done
}

# Fails unless OUTPUT (of a step) has PATTERN: what was expected and why.
expect() { # OUTPUT PATTERN WHY
  grep -q -E -- "$2" <<<"$1" || fail "$3"
}
refuse() { # OUTPUT PATTERN WHY
  ! grep -q -E -- "$2" <<<"$1" || fail "$3"
}

say "$("$spack_bin" --version | sed 's/^/Spack /'), clingo $(python3 -c 'import clingo; print(clingo.__version__)')"
copy_tree
write_environment
fill_mirror

say "spack concretize (distrun@main +mpi +train)"
dag=$(spack concretize --fresh 2>&1) || fail "spack concretize failed: $dag"
echo "$dag"
expect "$dag" '\^py-torch@' "the DAG of distrun+train has no py-torch"
expect "$dag" '\^openmpi@' "the DAG of distrun+mpi has no MPI (openmpi)"
expect "$dag" '\^gloo@' "the DAG has no gloo"

say "spack install"
spack install --fail-fast

say "spack test run distrun"
spack test run --alias distrun-smoke distrun || true
results=$(spack test results -l distrun-smoke 2>&1)
echo "$results"
for test in test_version test_hostnames test_bench_pi test_train; do
  expect "$results" "$test.*PASSED" "spack test run: $test did not pass"
done
refuse "$results" "FAILED" "spack test run: a test failed"

say "the installed distrun"
prefix=$(spack location -i distrun)
"$prefix/bin/distrun" --version
[[ -f $prefix/share/man/man1/distrun.1 ]] || fail "$prefix: no share/man/man1/distrun.1"

say "spack spec distrun~mpi~train"
dag=$(spack spec --fresh distrun~mpi~train 2>&1) || fail "spack spec distrun~mpi~train failed: $dag"
echo "$dag"
refuse "$dag" '\^(py-torch|openmpi)@' "distrun~mpi~train still needs py-torch or MPI"

say "spack spec distrun+nccl (the GPU backends: CUDA's and NCCL's headers)"
dag=$(spack spec --fresh distrun+nccl 2>&1) || fail "spack spec distrun+nccl failed: $dag"
expect "$dag" '\^cuda@' "distrun+nccl does not depend on cuda: $dag"
expect "$dag" '\^nccl@' "distrun+nccl does not depend on nccl: $dag"
say "passed"
