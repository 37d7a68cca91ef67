# Sourced by scripts/test and scripts/quickstart: compile through Debian's
# ccache with its cache outside the clone (docs/development.md, "Build times
# and the compiler cache"). Keyed by paths relative to the clone, so another
# clone of the same commit compiles from the cache. Every tree configured
# after this, including those of the tests (sanitizer, fuzz, packages),
# takes ccache as its compiler launcher. Without ccache it says so and
# changes nothing.
use_ccache() {
  command -v ccache >/dev/null || {
    echo "$(basename "$0"): no ccache (scripts/install-deps): every tree compiles from scratch"
    return 0
  }
  export CCACHE_DIR=${DISTRUN_CCACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/distrun/ccache}
  export CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=true CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-16G}
  export CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
  export CMAKE_CXX_COMPILER_LAUNCHER=ccache CMAKE_C_COMPILER_LAUNCHER=ccache
  # __FILE__ (every GoogleTest TEST, DISTRUN_ENFORCE) and the debug
  # information name sources relative to the clone, so an object is the same
  # in every clone: without it each unity batch, which includes its sources
  # by absolute path, missed the cache in a new folder. CMake takes CXXFLAGS
  # and CFLAGS when it first configures a tree.
  export CXXFLAGS="${CXXFLAGS:+$CXXFLAGS }-ffile-prefix-map=$PWD/="
  export CFLAGS="${CFLAGS:+$CFLAGS }-ffile-prefix-map=$PWD/="
}
