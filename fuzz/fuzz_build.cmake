# The libFuzzer build, included by the top CMakeLists.txt when DISTRUN_FUZZ
# is ON (docs/development.md, "The fuzz build"). The parsers of outside
# input are compiled with -fsanitize=fuzzer-no-link,address,undefined from
# their own distrun/<area> CMakeLists (which stop after their LibTorch-free
# libraries in this build), and each fuzz/<target>.cc links them with
# -fsanitize=fuzzer. Every undefined behaviour aborts, so libFuzzer reports it.
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "DISTRUN_FUZZ=ON needs clang++ (libFuzzer): "
                      "CXX=clang++ cmake -DDISTRUN_FUZZ=ON ... (scripts/test-fuzz)")
endif()
set(DISTRUN_BUILD_TESTS OFF)  # the GoogleTest suites belong to the normal build

find_package(fmt REQUIRED)
find_package(Threads REQUIRED)
find_package(ZLIB REQUIRED)
find_package(nlohmann_json REQUIRED)
set(DISTRUN_WITH_MPI OFF)
configure_file(distrun/config.h.in ${PROJECT_BINARY_DIR}/distrun/config.h @ONLY)

add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
                    -fno-omit-frame-pointer)
add_link_options(-fsanitize=address,undefined)

enable_testing()
add_subdirectory(distrun/common)
add_subdirectory(distrun/binding)
add_subdirectory(distrun/cluster)
add_subdirectory(distrun/rdzv)
add_subdirectory(distrun/data)
add_subdirectory(distrun/train)
add_subdirectory(distrun/container)
add_subdirectory(distrun/trace_merge)
add_subdirectory(fuzz)
