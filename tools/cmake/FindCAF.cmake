# Debian's libcaf-dev ships neither a CMake config nor a pkg-config file; this provides the
# target names CAF's own config uses from 0.18 on (CAF::core, CAF::io, CAF::openssl).
find_path(CAF_INCLUDE_DIR NAMES caf/all.hpp)
find_library(CAF_CORE_LIBRARY NAMES caf_core)
find_library(CAF_IO_LIBRARY NAMES caf_io)
find_library(CAF_OPENSSL_LIBRARY NAMES caf_openssl)
if(CAF_INCLUDE_DIR AND EXISTS "${CAF_INCLUDE_DIR}/caf/config.hpp")
  file(STRINGS "${CAF_INCLUDE_DIR}/caf/config.hpp" caf_version_line REGEX "#define CAF_VERSION [0-9]+")
  string(REGEX MATCH "[0-9]+" caf_version_number "${caf_version_line}")
  math(EXPR caf_major "${caf_version_number} / 10000")
  math(EXPR caf_minor "(${caf_version_number} / 100) % 100")
  math(EXPR caf_patch "${caf_version_number} % 100")
  set(CAF_VERSION "${caf_major}.${caf_minor}.${caf_patch}")
endif()
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(CAF
  REQUIRED_VARS CAF_INCLUDE_DIR CAF_CORE_LIBRARY CAF_IO_LIBRARY CAF_OPENSSL_LIBRARY
  VERSION_VAR CAF_VERSION)
if(CAF_FOUND AND NOT TARGET CAF::core)
  find_package(Threads REQUIRED)
  add_library(CAF::core UNKNOWN IMPORTED)
  set_target_properties(CAF::core PROPERTIES
    IMPORTED_LOCATION "${CAF_CORE_LIBRARY}"
    INTERFACE_SYSTEM_INCLUDE_DIRECTORIES "${CAF_INCLUDE_DIR}"
    INTERFACE_LINK_LIBRARIES Threads::Threads)
  add_library(CAF::io UNKNOWN IMPORTED)
  set_target_properties(CAF::io PROPERTIES
    IMPORTED_LOCATION "${CAF_IO_LIBRARY}"
    INTERFACE_LINK_LIBRARIES CAF::core)
  find_package(OpenSSL REQUIRED)
  add_library(CAF::openssl UNKNOWN IMPORTED)
  set_target_properties(CAF::openssl PROPERTIES
    IMPORTED_LOCATION "${CAF_OPENSSL_LIBRARY}"
    INTERFACE_LINK_LIBRARIES "CAF::io;OpenSSL::SSL;OpenSSL::Crypto")
endif()
