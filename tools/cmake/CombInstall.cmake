# `cmake --install build` (as root, or with DESTDIR=... for a staging folder): the binaries, the
# example config, and the systemd unit with its sysusers and tmpfiles entries. Then:
#   systemd-sysusers && systemd-tmpfiles --create && systemctl enable --now comb-relay
include(GNUInstallDirs)

install(TARGETS comb-relay comb-admin comb-watch comb-bench
        RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")

# The relay reads /etc/comb/comb.toml when no config is named (conf::default_config_file): an
# absolute path whatever the prefix, under DESTDIR when one is given.
install(FILES "${PROJECT_SOURCE_DIR}/conf/comb.example.toml"
        DESTINATION "${CMAKE_INSTALL_DATADIR}/doc/comb")
set(COMB_EXAMPLE_CONFIG "${PROJECT_SOURCE_DIR}/conf/comb.example.toml")
install(CODE "
  set(config \"\$ENV{DESTDIR}/etc/comb/comb.toml\")
  if(EXISTS \"\${config}\")
    message(STATUS \"Kept: \${config} (the example is in share/doc/comb)\")
  else()
    # file(INSTALL) adds DESTDIR itself. No secrets in it (those go in comb.env): readable by
    # the relay's user.
    file(INSTALL \"${COMB_EXAMPLE_CONFIG}\" DESTINATION /etc/comb RENAME comb.toml
         PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
  endif()
")

# Where systemd looks for units, sysusers and tmpfiles under the prefix (/usr/local/lib/...
# and /usr/lib/... are both on its search paths).
set(COMB_INSTALL_BINDIR "${CMAKE_INSTALL_FULL_BINDIR}")
configure_file("${PROJECT_SOURCE_DIR}/conf/systemd/comb-relay.service.in"
               "${PROJECT_BINARY_DIR}/systemd/comb-relay.service" @ONLY)
install(FILES "${PROJECT_BINARY_DIR}/systemd/comb-relay.service"
        DESTINATION "${CMAKE_INSTALL_PREFIX}/lib/systemd/system")
install(FILES "${PROJECT_SOURCE_DIR}/conf/systemd/comb.sysusers"
        DESTINATION "${CMAKE_INSTALL_PREFIX}/lib/sysusers.d" RENAME comb.conf)
install(FILES "${PROJECT_SOURCE_DIR}/conf/systemd/comb.tmpfiles"
        DESTINATION "${CMAKE_INSTALL_PREFIX}/lib/tmpfiles.d" RENAME comb.conf)
