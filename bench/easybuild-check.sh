#!/usr/bin/env bash
# Runs the real EasyBuild on distrun's easyconfigs (packaging/easybuild),
# offline, from checkouts of its three repositories: eb --check-style, then
# eb --dry-run --robot, which must resolve every dependency of
# distrun-0.1.0-foss-2024a.eb (PyTorch, the foss/2024a toolchain, our gloo)
# from the easyconfigs checkout. Not part of CI: EasyBuild is not in Debian
# and CI cannot fetch it (docs/install.md gives the last run's figures).
#   bench/easybuild-check.sh FRAMEWORK_DIR EASYBLOCKS_DIR EASYCONFIGS_DIR
# The folders hold easybuild-framework, easybuild-easyblocks and
# easybuild-easyconfigs (each the root of its repository).
set -euo pipefail
usage="usage: bench/easybuild-check.sh FRAMEWORK_DIR EASYBLOCKS_DIR EASYCONFIGS_DIR"
framework=$(cd "${1:?$usage}" && pwd)
easyblocks=$(cd "${2:?$usage}" && pwd)
easyconfigs=$(cd "${3:?$usage}" && pwd)/easybuild/easyconfigs
recipes=$(cd "$(dirname "$0")/../packaging/easybuild" && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

lmod=/usr/share/lmod/lmod/libexec/lmod
[[ -x $lmod ]] || { echo "easybuild-check: needs Debian's lmod ($lmod)" >&2; exit 1; }
/usr/bin/python3 -c 'import pycodestyle' 2>/dev/null ||
  { echo "easybuild-check: --check-style needs python3-pycodestyle" >&2; exit 1; }
eb() {
  LMOD_CMD=$lmod PYTHONPATH=$framework:$easyblocks /usr/bin/python3 -m easybuild.main \
    --allow-use-as-root-and-accept-consequences --prefix="$scratch" "$@"
}
eb --check-style "$recipes"/*.eb 2>&1 | grep -E '^\[(PASS|FAIL)\]|style checks'
eb --dry-run --robot="$recipes:$easyconfigs" "$recipes/distrun-0.1.0-foss-2024a.eb" >"$scratch/dry" 2>&1 ||
  { tail -20 "$scratch/dry" >&2; exit 1; }
echo "easybuild-check: eb --dry-run --robot resolved $(grep -c '^ \* \[.\]' "$scratch/dry") easyconfigs, the last:"
grep '^ \* \[.\]' "$scratch/dry" | grep -E 'gloo|PyTorch|distrun'
