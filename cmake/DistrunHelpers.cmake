# distrun_cc_library(NAME name SRCS ... [HDRS ...] [DEPS ...] [PUBLIC_DEPS ...] [INSTALL]
#                    [LIBTORCH])
#   Creates distrun_<name> with the alias distrun::<name>. DEPS link PRIVATE,
#   PUBLIC_DEPS link PUBLIC. Sources are listed explicitly, never globbed.
#   INSTALL: part of the C++ library users build against (`cmake --install`
#   puts it and its HDRS under the prefix, exported as distrun::<name>).
#   LIBTORCH: it links LibTorch, whose headers its sources then start with,
#   precompiled, in a tree with DISTRUN_PRECOMPILED_HEADERS
#   (cmake/DistrunPrecompiledHeaders.cmake).
# distrun_cc_test(NAME name SRCS ... [DEPS ...] [LABEL l] [RESOURCE_LOCK r] [LIBTORCH])
#   Creates the GoogleTest binary <name> and registers every test in it with
#   ctest, each carrying LABEL (default: unit; peers: slurm, mpi, python),
#   and serialised with other tests holding the same RESOURCE_LOCK. In a tree
#   with DISTRUN_PRECOMPILED_HEADERS its sources start with GoogleTest's
#   headers precompiled, and LibTorch's too with LIBTORCH, which a test that
#   links LibTorch, directly or not, needs. In a sanitizer tree
#   (cmake/DistrunSanitizers.cmake) only the binaries that tree runs are
#   created, each run in shards named asan.<name>.<k> or tsan.<name>.<k> and
#   labelled asan or tsan.

set(DISTRUN_WARNINGS -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion
    -Wnon-virtual-dtor -Wold-style-cast -Woverloaded-virtual -Wimplicit-fallthrough)
# In a unity build (scripts/test) every source is #included into the batch's
# file, and GCC's -Wsubobject-linkage, meant for headers, then flags each
# class of a source that holds a type of that source's anonymous namespace.
if(CMAKE_UNITY_BUILD)
  list(APPEND DISTRUN_WARNINGS -Wno-subobject-linkage)
endif()

function(distrun_apply_warnings target)
  target_compile_options(${target} PRIVATE ${DISTRUN_WARNINGS})
  if(DISTRUN_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

function(distrun_cc_library)
  cmake_parse_arguments(L "INSTALL;LIBTORCH" "NAME" "SRCS;HDRS;DEPS;PUBLIC_DEPS" ${ARGN})
  set(target distrun_${L_NAME})
  add_library(${target} STATIC ${L_SRCS} ${L_HDRS})
  add_library(distrun::${L_NAME} ALIAS ${target})
  target_include_directories(${target} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>
    $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_link_libraries(${target} PRIVATE ${L_DEPS} PUBLIC ${L_PUBLIC_DEPS})
  set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  distrun_apply_warnings(${target})
  if(L_LIBTORCH)
    distrun_use_pch(${target} distrun_pch_torch)
  endif()
  if(L_INSTALL)
    set_target_properties(${target} PROPERTIES EXPORT_NAME ${L_NAME})
    install(TARGETS ${target} EXPORT distrunTargets
            ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
    file(RELATIVE_PATH folder ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR})
    foreach(header ${L_HDRS})
      get_filename_component(subfolder ${header} DIRECTORY)
      install(FILES ${header} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/${folder}/${subfolder})
    endforeach()
  endif()
endfunction()

include(GoogleTest)

function(distrun_cc_test)
  if(NOT DISTRUN_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(T "LIBTORCH" "NAME;LABEL;RESOURCE_LOCK" "SRCS;DEPS" ${ARGN})
  set(labels unit)
  if(T_LABEL)
    set(labels ${T_LABEL})
  endif()
  distrun_sanitizer_wants(${T_NAME} ${labels} wanted)
  if(NOT wanted)
    return()
  endif()
  add_executable(${T_NAME} ${T_SRCS})
  target_link_libraries(${T_NAME} PRIVATE ${T_DEPS} GTest::gmock GTest::gtest GTest::gtest_main)
  target_compile_definitions(${T_NAME} PRIVATE
    DISTRUN_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    DISTRUN_BINARY_DIR="${PROJECT_BINARY_DIR}")
  distrun_apply_warnings(${T_NAME})
  if(T_LIBTORCH)
    distrun_use_pch(${T_NAME} distrun_pch_torch_tests)
  else()
    distrun_use_pch(${T_NAME} distrun_pch_tests)
  endif()
  if(DISTRUN_SANITIZER_LABEL)
    # A sanitizer tree (cmake/DistrunSanitizers.cmake): the binary's shards.
    distrun_sanitizer_register(${T_NAME} ${labels} "${T_RESOURCE_LOCK}")
    return()
  endif()
  # One label per binary: gtest_discover_tests flattens PROPERTIES into a
  # single list, so a second label would be read as a property name.
  set(lock "")
  if(T_RESOURCE_LOCK)
    set(lock RESOURCE_LOCK ${T_RESOURCE_LOCK})
  endif()
  gtest_discover_tests(${T_NAME}
    WORKING_DIRECTORY ${PROJECT_BINARY_DIR}
    PROPERTIES LABELS "${labels}" ${lock} TIMEOUT 600
    DISCOVERY_TIMEOUT 60)
endfunction()
