# Sanitizer trees (docs/development.md, docs/reliability.md).
#   -DDISTRUN_SANITIZE=address,undefined   ASan + UBSan: every unit and multiproc test
#   -DDISTRUN_SANITIZE=thread              TSan: the comm, rendezvous and DDP tests
# Empty (the default): a normal tree. A sanitizer tree builds only the tests it
# runs and the programs they start (the target distrun_sanitizer_tests), registers
# them as "asan.<Suite>.<Test>" or "tsan.<Suite>.<Test>" with the label asan or tsan,
# and gives each test the sanitizer's options (ENVIRONMENT), so that its tests run
# in the same ctest run as the normal tree's (scripts/test) or alone in the tree.
# Reports fail the test: ASan and TSan stop at the first one, UBSan does not recover.

set(DISTRUN_SANITIZE "" CACHE STRING
    "Build a sanitizer tree: address,undefined or thread (empty: a normal tree)")
set(DISTRUN_SANITIZER_DIR ${CMAKE_CURRENT_LIST_DIR}/sanitizers)
set(supp ${DISTRUN_SANITIZER_DIR})

# The TSan tree's tests: the Communicator contract and the collectives with ranks
# as threads, the rendezvous store, DDP and the Trainer with ranks as threads.
set(DISTRUN_TSAN_TESTS comm_test rdzv_test ddp_test trainer_test)
# The programs the ASan tree's multiproc tests start (distrun/testing/command.h
# binaryPath): sanitized too, so a report in them fails the test that ran them.
set(DISTRUN_ASAN_PROGRAMS distrun distrun-train distrun-bench comm_contract_worker)

# Tests that cannot run under a sanitizer, as BINARY:Suite.Test, each with its
# reason; ctest lists them as not run (Disabled).
set(DISTRUN_SANITIZER_EXCLUDED
  # It checks glibc malloc's own bookkeeping (mallopt, mallinfo2), and every
  # sanitizer replaces malloc with its own allocator.
  trainer_test:FreedMemoryTest.ALargeFreedBlockStaysInTheProcess)

set(DISTRUN_SANITIZER_LABEL "")
if(DISTRUN_SANITIZE STREQUAL "address,undefined")
  set(DISTRUN_SANITIZER_LABEL asan)
  set(DISTRUN_SANITIZER_ENV
    "ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:abort_on_error=0"
    # hwloc's PCI plugin (libpciaccess) leaks as it probes this machine's bus, and
    # hwloc unloads it before LeakSanitizer looks, so no suppression can name it
    # (lsan.supp): the tests read this machine's cores and NUMA nodes without it.
    "HWLOC_COMPONENTS=-pci"
    "LSAN_OPTIONS=suppressions=${supp}/lsan.supp:print_suppressions=0"
    "UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:suppressions=${supp}/ubsan.supp")
  set(sanitizer_flags -fsanitize=address,undefined -fno-sanitize-recover=undefined)
elseif(DISTRUN_SANITIZE STREQUAL "thread")
  set(DISTRUN_SANITIZER_LABEL tsan)
  set(DISTRUN_SANITIZER_ENV
    "TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=${supp}/tsan.supp")
  set(sanitizer_flags -fsanitize=thread)
elseif(NOT DISTRUN_SANITIZE STREQUAL "")
  message(FATAL_ERROR
    "DISTRUN_SANITIZE=${DISTRUN_SANITIZE}: expected address,undefined, thread or empty")
endif()

if(DISTRUN_SANITIZER_LABEL)
  message(STATUS "distrun: sanitizer tree, -fsanitize=${DISTRUN_SANITIZE}")
  # -O1 -g1 after the build type's flags: quick to build, quick enough to run,
  # and reports name files and lines.
  add_compile_options(${sanitizer_flags} -fno-omit-frame-pointer -O1 -g1)
  add_link_options(${sanitizer_flags})
endif()

# Whether the test binary NAME with label LABEL belongs to this tree (OUT: TRUE
# or FALSE). A normal tree has them all; the ASan tree the unit and multiproc
# tests (the others need peers whose tests are not about distrun's memory:
# Slurm, mpirun, Python, container tools); the TSan tree DISTRUN_TSAN_TESTS.
function(distrun_sanitizer_wants name label out)
  set(wanted TRUE)
  if(DISTRUN_SANITIZER_LABEL STREQUAL "asan")
    if(NOT label MATCHES "^(unit|multiproc)$")
      set(wanted FALSE)
    endif()
  elseif(DISTRUN_SANITIZER_LABEL STREQUAL "tsan")
    if(NOT name IN_LIST DISTRUN_TSAN_TESTS)
      set(wanted FALSE)
    endif()
  endif()
  set(${out} ${wanted} PARENT_SCOPE)
endfunction()

# Gives every test of the binary NAME the sanitizer's environment: a file that
# ctest includes after the one gtest_discover_tests wrote (whose variable
# NAME_TESTS lists them), since gtest_discover_tests's PROPERTIES cannot carry
# a list such as ENVIRONMENT's.
function(distrun_sanitizer_register name)
  set_property(GLOBAL APPEND PROPERTY DISTRUN_SANITIZER_TESTS ${name})
  set(file ${CMAKE_CURRENT_BINARY_DIR}/${name}_sanitizer_env.cmake)
  file(WRITE ${file}
    "if(${name}_TESTS)\n"
    "  set_tests_properties(\${${name}_TESTS}\n"
    "    PROPERTIES ENVIRONMENT \"${DISTRUN_SANITIZER_ENV}\")\n"
    "endif()\n")
  foreach(excluded ${DISTRUN_SANITIZER_EXCLUDED})
    if(excluded MATCHES "^${name}:(.*)$")
      file(APPEND ${file} "if(${name}_TESTS)\n"
        "  set_tests_properties(${DISTRUN_SANITIZER_LABEL}.${CMAKE_MATCH_1}\n"
        "    PROPERTIES DISABLED TRUE)\n"
        "endif()\n")
    endif()
  endforeach()
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${file})
endfunction()

# The target that builds this sanitizer tree's tests and the programs they start.
function(distrun_sanitizer_target)
  if(NOT DISTRUN_SANITIZER_LABEL)
    return()
  endif()
  get_property(tests GLOBAL PROPERTY DISTRUN_SANITIZER_TESTS)
  add_custom_target(distrun_sanitizer_tests)
  add_dependencies(distrun_sanitizer_tests ${tests})
  if(DISTRUN_SANITIZER_LABEL STREQUAL "asan")
    add_dependencies(distrun_sanitizer_tests ${DISTRUN_ASAN_PROGRAMS})
  endif()
endfunction()

# In a normal tree BINARY_DIR: ctest also runs the sanitizer trees' tests and
# the fuzz tree's short runs when scripts/test has built them in BINARY_DIR/asan,
# BINARY_DIR/tsan and BINARY_DIR/fuzz, so that one ctest run runs everything and
# ends with one summary line.
function(distrun_include_sanitizer_trees)
  if(DISTRUN_SANITIZER_LABEL OR NOT DISTRUN_BUILD_TESTS)
    return()
  endif()
  set(file ${PROJECT_BINARY_DIR}/sanitizer_trees.cmake)
  file(WRITE ${file} "# Written by cmake/DistrunSanitizers.cmake.\n")
  foreach(tree asan tsan fuzz)
    set(dir ${PROJECT_BINARY_DIR}/${tree})
    file(APPEND ${file}
      "if(EXISTS \"${dir}/CTestTestfile.cmake\")\n  subdirs(\"${dir}\")\nendif()\n")
  endforeach()
  set_property(DIRECTORY ${PROJECT_SOURCE_DIR} APPEND PROPERTY TEST_INCLUDE_FILES ${file})
endfunction()
