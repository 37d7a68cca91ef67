# Sanitizer trees (docs/development.md, docs/reliability.md).
#   -DDISTRUN_SANITIZE=address,undefined   ASan + UBSan: every unit and multiproc test
#   -DDISTRUN_SANITIZE=thread              TSan: the comm, rendezvous and DDP tests
# Empty (the default): a normal tree. A sanitizer tree builds only the tests it
# runs and the programs they start (the target distrun_sanitizer_tests). Its tests
# are registered when the tree is configured, before anything is built, so that a
# ctest run can build the tree while it runs other tests (scripts/test):
# - "<label>.build" (label asan or tsan) builds the target; it is the fixture
#   "<label>.tree" that every test of the tree requires;
# - "<label>.<binary>.<k>" runs shard k of the GoogleTest binary (GTEST_SHARD_INDEX,
#   GTEST_TOTAL_SHARDS), with the sanitizer's options in its ENVIRONMENT.
# Reports fail the test: ASan and TSan stop at the first one, UBSan does not recover.

set(DISTRUN_SANITIZE "" CACHE STRING
    "Build a sanitizer tree: address,undefined or thread (empty: a normal tree)")
set(DISTRUN_SANITIZER_DIR ${CMAKE_CURRENT_LIST_DIR}/sanitizers)
set(supp ${DISTRUN_SANITIZER_DIR})

# The TSan tree's tests: the Communicator contract and the collectives with ranks
# as threads, the rendezvous store, DDP and the Trainer with ranks as threads, the
# trace recorder's writer (threads and its flusher).
set(DISTRUN_TSAN_TESTS comm_test comm_shm_test rdzv_test ddp_test trainer_test trace_test)
# The programs the ASan tree's multiproc tests start (distrun/testing/command.h
# binaryPath): sanitized too, so a report in them fails the test that ran them.
set(DISTRUN_ASAN_PROGRAMS distrun distrun-train distrun-bench comm_contract_worker)

# Tests that cannot run under a sanitizer, as BINARY:Suite.Test, each with its
# reason; the binary's shards run without them (GTEST_FILTER).
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
  # After the build type's flags; -g1: reports name files and lines. The ASan
  # tree at -Og: its build is the test run's critical path (scripts/test),
  # and GCC compiles ASan + UBSan at -Og in under half the time of -O1 (the
  # launcher's test unit 45 s against 97 s; docs/reliability.md). The TSan
  # tree at -O1, as ThreadSanitizer's documentation advises.
  if(DISTRUN_SANITIZER_LABEL STREQUAL "asan")
    set(sanitizer_optimization -Og)
  else()
    set(sanitizer_optimization -O1)
  endif()
  add_compile_options(${sanitizer_flags} -fno-omit-frame-pointer ${sanitizer_optimization} -g1)
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

# How many shards a binary of LABEL (its normal tree's label) runs in: the
# multiproc binaries hold the long tests, so their shards keep both cores busy.
function(distrun_sanitizer_shards label out)
  if(label STREQUAL "multiproc")
    set(${out} 4 PARENT_SCOPE)
  else()
    set(${out} 2 PARENT_SCOPE)
  endif()
endfunction()

# Registers the shards of the test binary NAME (label LABEL in a normal tree,
# LOCK its RESOURCE_LOCK or empty) in this sanitizer tree.
function(distrun_sanitizer_register name label lock)
  set_property(GLOBAL APPEND PROPERTY DISTRUN_SANITIZER_TESTS ${name})
  set(env ${DISTRUN_SANITIZER_ENV})
  set(skipped "")
  foreach(excluded ${DISTRUN_SANITIZER_EXCLUDED})
    if(excluded MATCHES "^${name}:(.*)$")
      list(APPEND skipped ${CMAKE_MATCH_1})
    endif()
  endforeach()
  if(skipped)
    list(JOIN skipped ":" filter)
    list(APPEND env "GTEST_FILTER=-${filter}")
  endif()
  distrun_sanitizer_shards(${label} shards)
  math(EXPR last "${shards} - 1")
  foreach(k RANGE ${last})
    set(test ${DISTRUN_SANITIZER_LABEL}.${name}.${k})
    add_test(NAME ${test} COMMAND ${name} WORKING_DIRECTORY ${PROJECT_BINARY_DIR})
    set_tests_properties(${test} PROPERTIES
      LABELS ${DISTRUN_SANITIZER_LABEL} TIMEOUT 1200
      FIXTURES_REQUIRED ${DISTRUN_SANITIZER_LABEL}.tree
      ENVIRONMENT "${env};GTEST_TOTAL_SHARDS=${shards};GTEST_SHARD_INDEX=${k}")
    if(lock)
      set_tests_properties(${test} PROPERTIES RESOURCE_LOCK ${lock})
    endif()
  endforeach()
endfunction()

# The test "<name>.build" (label LABEL) that builds TARGET of this tree with every
# core, niced so the tests running beside it keep theirs; the fixture "<name>.tree".
# The builds of the trees take turns (RESOURCE_LOCK), before any other test and
# the ASan tree first, whose tests take longest (COST: the higher, the sooner;
# the Debian packages' build, in the same lock, comes second: CMakeLists.txt).
function(distrun_tree_build_test name label target)
  set(cost 100000)
  if(name STREQUAL "asan")
    set(cost 300000)
  elseif(name STREQUAL "tsan")
    set(cost 200000)
  endif()
  cmake_host_system_information(RESULT cores QUERY NUMBER_OF_LOGICAL_CORES)
  add_test(NAME ${name}.build
    COMMAND nice -n 10 ${CMAKE_COMMAND} --build ${PROJECT_BINARY_DIR} --target ${target}
            -j ${cores})
  set_tests_properties(${name}.build PROPERTIES
    LABELS ${label} TIMEOUT 3600 FIXTURES_SETUP ${name}.tree
    RESOURCE_LOCK distrun_tree_build COST ${cost})
endfunction()

# The target that builds this sanitizer tree's tests and the programs they start.
function(distrun_sanitizer_target)
  if(NOT DISTRUN_SANITIZER_LABEL)
    return()
  endif()
  get_property(tests GLOBAL PROPERTY DISTRUN_SANITIZER_TESTS)
  add_custom_target(distrun_sanitizer_tests)
  distrun_tree_build_test(${DISTRUN_SANITIZER_LABEL} ${DISTRUN_SANITIZER_LABEL}
                          distrun_sanitizer_tests)
  add_dependencies(distrun_sanitizer_tests ${tests})
  if(DISTRUN_SANITIZER_LABEL STREQUAL "asan")
    add_dependencies(distrun_sanitizer_tests ${DISTRUN_ASAN_PROGRAMS})
  endif()
endfunction()

# In a normal tree BINARY_DIR: ctest also runs the sanitizer trees' tests and
# the fuzz tree's short runs when scripts/test has configured them in
# BINARY_DIR/asan, BINARY_DIR/tsan and BINARY_DIR/fuzz (their ".build" tests
# build them), so that one ctest run runs everything and ends with one summary
# line.
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
