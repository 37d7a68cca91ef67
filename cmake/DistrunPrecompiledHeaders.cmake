# Precompiled headers (docs/development.md): -DDISTRUN_PRECOMPILED_HEADERS=ON,
# set by scripts/test and debian/rules, off in a plain `cmake -B build` so that
# a source that misses an include still fails there (as with unity builds).
#
# Parsing LibTorch's headers is most of a training target's compile time
# (<torch/types.h> alone takes ~6 s, once per unity batch), and GoogleTest's
# and the standard library's are a second of each test binary's. Each set is
# parsed once per tree instead, by a donor target that only precompiles it;
# the targets reuse its .gch (REUSE_FROM):
#   distrun_pch_torch        LibTorch's headers, -fPIC: the training libraries
#   distrun_pch_torch_tests  the same and GoogleTest's, for executables: the
#                            training tests
#   distrun_pch_tests        GoogleTest's and the standard library's: the others
# GCC uses a .gch only if the options that shape the headers (-O, -fPIC or
# -fPIE, -Wpedantic, the sanitizers, macros such as LibTorch's
# _GLIBCXX_USE_CXX11_ABI) are those it was made with, and otherwise parses
# them again; CMake compiles every user with -Winvalid-pch, so under -Werror
# (CI) a donor and a user that drift apart fail the build rather than make it
# slower unnoticed.
#
# GCC 12 does not keep a header's `#pragma GCC diagnostic` in a .gch: the
# warnings libstdc++'s <bits/char_traits.h> turns off for its own copies
# (-Warray-bounds, -Wstringop-overflow, -Wstringop-overread: false positives of
# std::string's operator+ at -O2) are off in the users too. A plain tree, built
# without precompiled headers, still gives them.

option(DISTRUN_PRECOMPILED_HEADERS
       "Precompile LibTorch's, GoogleTest's and common standard headers once per tree" OFF)

set(DISTRUN_PCH_STANDARD <algorithm> <chrono> <cstdint> <filesystem> <functional> <map> <memory>
    <optional> <string> <string_view> <thread> <vector>)
# LibTorch's headers that distrun's training sources include.
set(DISTRUN_PCH_TORCH <torch/types.h> <torch/autograd.h> <torch/utils.h> <torch/nn/module.h>
    <torch/nn/modules/linear.h> <torch/nn/modules/conv.h> <torch/nn/functional/activation.h>
    <torch/nn/functional/loss.h> <torch/nn/functional/pooling.h> <torch/optim/sgd.h>
    <torch/optim/adam.h> <torch/serialize/input-archive.h> <torch/serialize/output-archive.h>
    <ATen/Parallel.h> <ATen/CPUGeneratorImpl.h>)
set(DISTRUN_PCH_GTEST <gtest/gtest.h> <gmock/gmock.h>)

set(DISTRUN_PCH_QUIETED_WARNINGS -Wno-array-bounds -Wno-stringop-overflow -Wno-stringop-overread)

# distrun_pch_donor(NAME PIC LIBRARIES HEADERS...): the object library NAME that
# precompiles HEADERS (PIC: ON for users that are libraries) with LIBRARIES'
# include directories and definitions.
function(distrun_pch_donor name pic libraries)
  set(source ${PROJECT_BINARY_DIR}/pch/${name}.cc)
  file(CONFIGURE OUTPUT ${source} CONTENT "// The donor of ${name}'s precompiled headers.\n")
  add_library(${name} OBJECT ${source})
  target_link_libraries(${name} PRIVATE ${libraries})
  set_target_properties(${name} PROPERTIES POSITION_INDEPENDENT_CODE ${pic} UNITY_BUILD OFF)
  target_precompile_headers(${name} PRIVATE ${ARGN})
  # The users' warnings too: -Wpedantic, for one, undefines __cpp_runtime_arrays.
  distrun_apply_warnings(${name})
endfunction()

# Creates the donors this tree's targets use (after find_package of Torch and GTest).
function(distrun_pch_donors)
  if(NOT DISTRUN_PRECOMPILED_HEADERS)
    return()
  endif()
  if(DISTRUN_WITH_TRAIN)
    distrun_pch_donor(distrun_pch_torch ON torch ${DISTRUN_PCH_STANDARD} ${DISTRUN_PCH_TORCH})
  endif()
  if(DISTRUN_BUILD_TESTS)
    set(gtest GTest::gmock GTest::gtest)
    distrun_pch_donor(distrun_pch_tests OFF "${gtest}" ${DISTRUN_PCH_STANDARD} ${DISTRUN_PCH_GTEST})
    if(DISTRUN_WITH_TRAIN)
      distrun_pch_donor(distrun_pch_torch_tests OFF "torch;${gtest}" ${DISTRUN_PCH_STANDARD}
                        ${DISTRUN_PCH_TORCH} ${DISTRUN_PCH_GTEST})
    endif()
  endif()
endfunction()

# distrun_use_pch(TARGET DONOR): TARGET's sources start with DONOR's headers.
function(distrun_use_pch target donor)
  if(NOT DISTRUN_PRECOMPILED_HEADERS)
    return()
  endif()
  target_precompile_headers(${target} REUSE_FROM ${donor})
  target_compile_options(${target} PRIVATE ${DISTRUN_PCH_QUIETED_WARNINGS})
endfunction()
