# The Lmod module file (share/modulefiles/distrun.lua.in), installed as
# <prefix>/share/modulefiles/distrun/<version>.lua. It is written at install
# time, so that it names the prefix distrun was installed to, including one
# given as `cmake --install --prefix`.
set(DISTRUN_MODULE_TEMPLATE ${PROJECT_SOURCE_DIR}/share/modulefiles/distrun.lua.in)
install(CODE "
  set(DISTRUN_VERSION ${PROJECT_VERSION})
  set(DISTRUN_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  set(DISTRUN_MODULE_DIR \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_DATADIR}/modulefiles\")
  set(DISTRUN_DOC_DIR \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_DOCDIR}\")
  set(DISTRUN_BIN_DIR ${CMAKE_INSTALL_BINDIR})
  set(DISTRUN_MAN_DIR ${CMAKE_INSTALL_MANDIR})
  set(DISTRUN_LIB_DIR ${CMAKE_INSTALL_LIBDIR})
  configure_file(${DISTRUN_MODULE_TEMPLATE}
                 \"${PROJECT_BINARY_DIR}/modulefiles/distrun/${PROJECT_VERSION}.lua\" @ONLY)
  file(INSTALL \"${PROJECT_BINARY_DIR}/modulefiles/distrun/${PROJECT_VERSION}.lua\"
       DESTINATION \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_DATADIR}/modulefiles/distrun\")
")
