# The GPU toolchain (docs/install.md): the CUDA toolkit and NCCL, found when
# present and never required, as MPI is. -DDISTRUN_NCCL=AUTO (default) looks
# for both, ON fails the configure when either is missing, OFF looks for
# neither. What is found is printed in the configure summary and in
# `distrun --version` (DISTRUN_CUDA_VERSION, DISTRUN_NCCL_VERSION: empty when
# not found); the GPU parts of distrun build on DISTRUN_WITH_NCCL.
set(DISTRUN_NCCL AUTO CACHE STRING
    "Find the CUDA toolkit and NCCL: AUTO (use them when found), ON (require them) or OFF")
set_property(CACHE DISTRUN_NCCL PROPERTY STRINGS AUTO ON OFF)
set(DISTRUN_WITH_NCCL OFF)
set(DISTRUN_CUDA_VERSION "")
set(DISTRUN_NCCL_VERSION "")

# distrun_read_nccl_version(HEADER OUT): "2.28.9" from nccl.h's defines.
function(distrun_read_nccl_version header out)
  file(STRINGS ${header} defines REGEX "^#define NCCL_(MAJOR|MINOR|PATCH) +[0-9]+")
  set(parts "")
  foreach(part MAJOR MINOR PATCH)
    string(REGEX MATCH "NCCL_${part} +([0-9]+)" ignored "${defines}")
    list(APPEND parts ${CMAKE_MATCH_1})
  endforeach()
  list(JOIN parts "." version)
  set(${out} ${version} PARENT_SCOPE)
endfunction()

# distrun_gpu_missing(WHAT): fatal under ON, a status line under AUTO.
function(distrun_gpu_missing what)
  if(DISTRUN_NCCL STREQUAL "ON")
    message(FATAL_ERROR "DISTRUN_NCCL=ON but ${what}: install the CUDA toolkit with NCCL "
                        "(or point CUDAToolkit_ROOT and NCCL_ROOT at them), or use -DDISTRUN_NCCL=AUTO")
  endif()
  message(STATUS "distrun: ${what}; the GPU parts are not built")
endfunction()

if(NOT DISTRUN_NCCL MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "DISTRUN_NCCL='${DISTRUN_NCCL}': expected AUTO, ON or OFF")
endif()
if(NOT DISTRUN_NCCL STREQUAL "OFF")
  find_package(CUDAToolkit QUIET)
  if(NOT CUDAToolkit_FOUND)
    distrun_gpu_missing("no CUDA toolkit was found")
  else()
    set(DISTRUN_CUDA_VERSION ${CUDAToolkit_VERSION})
    find_path(NCCL_INCLUDE_DIR nccl.h
              HINTS ${NCCL_ROOT} $ENV{NCCL_ROOT} $ENV{NCCL_HOME} ${CUDAToolkit_INCLUDE_DIRS}
              PATH_SUFFIXES include)
    find_library(NCCL_LIBRARY nccl
                 HINTS ${NCCL_ROOT} $ENV{NCCL_ROOT} $ENV{NCCL_HOME} ${CUDAToolkit_LIBRARY_DIR}
                       ${CUDAToolkit_LIBRARY_ROOT}
                 PATH_SUFFIXES lib lib64)
    if(NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
      distrun_read_nccl_version(${NCCL_INCLUDE_DIR}/nccl.h DISTRUN_NCCL_VERSION)
      set(DISTRUN_WITH_NCCL ON)
      # nccl.h's and the CUDA runtime's headers only: the nccl backend loads
      # libnccl and libcudart at run time (distrun/comm/nccl/), so a build
      # with them still installs and runs where they are absent.
      if(NOT TARGET distrun::nccl_headers)
        add_library(distrun::nccl_headers INTERFACE IMPORTED)
        set_target_properties(distrun::nccl_headers PROPERTIES
                              INTERFACE_INCLUDE_DIRECTORIES "${NCCL_INCLUDE_DIR};${CUDAToolkit_INCLUDE_DIRS}")
      endif()
    else()
      distrun_gpu_missing("CUDA ${CUDAToolkit_VERSION} was found but not NCCL (nccl.h and libnccl)")
    endif()
  endif()
endif()
if(DISTRUN_WITH_NCCL)
  message(STATUS "distrun: GPU toolchain: CUDA ${DISTRUN_CUDA_VERSION} (${CUDAToolkit_BIN_DIR}), "
                 "NCCL ${DISTRUN_NCCL_VERSION} (${NCCL_LIBRARY})")
elseif(DISTRUN_NCCL STREQUAL "OFF")
  message(STATUS "distrun: GPU toolchain: not looked for (-DDISTRUN_NCCL=OFF)")
endif()
