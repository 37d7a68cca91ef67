# The man pages (scripts/make-man-pages): written from the programs' --help
# with help2man once they are built, into <build>/share/man/man1, installed
# under <prefix>/share/man. Without help2man (scripts/install-deps installs
# it) the build has none and says so.
find_program(DISTRUN_HELP2MAN help2man)
if(NOT DISTRUN_HELP2MAN)
  message(STATUS "distrun: man pages not built: no help2man")
  return()
endif()
set(man_dir ${PROJECT_BINARY_DIR}/share/man)
set(man_programs distrun distrun-bench distrun-doctor)
if(DISTRUN_WITH_TRAIN)
  list(APPEND man_programs distrun-train)
endif()
set(man_script ${PROJECT_SOURCE_DIR}/scripts/make-man-pages)
add_custom_command(
  OUTPUT ${man_dir}/man1/distrun.1
  COMMAND ${CMAKE_COMMAND} -E rm -rf ${man_dir}/man1
  COMMAND ${man_script} $<TARGET_FILE_DIR:distrun> ${man_dir} ${PROJECT_VERSION}
          ${CMAKE_INSTALL_FULL_DOCDIR}
  DEPENDS ${man_programs} ${man_script} ${PROJECT_SOURCE_DIR}/scripts/distrun-commands.sh
  COMMENT "Writing the man pages from --help")
add_custom_target(distrun_man_pages ALL DEPENDS ${man_dir}/man1/distrun.1)
install(DIRECTORY ${man_dir}/man1 DESTINATION ${CMAKE_INSTALL_MANDIR})
if(DISTRUN_BUILD_TESTS AND NOT DISTRUN_SANITIZER_LABEL)
  add_test(NAME man.pages_match_help
           COMMAND ${PROJECT_SOURCE_DIR}/scripts/check-man-pages ${PROJECT_BINARY_DIR})
  set_tests_properties(man.pages_match_help PROPERTIES LABELS unit)
endif()
