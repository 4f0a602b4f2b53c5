# `cmake --install BUILD [--prefix P]`: the C++ package (libraries, public headers,
# tcsolveConfig.cmake) and, when built, the `tcsolve` command and the Python package
# (python/CMakeLists.txt). A consumer project then writes
#   find_package(tcsolve 0.1 REQUIRED)        # CMAKE_PREFIX_PATH=P
#   target_link_libraries(app PRIVATE tcsolve::tcsolve)
# and includes <tcsolve/tcsolve.hpp> (examples/consumer/ is such a project; the CTest
# `install_consumer` builds it against a fresh install tree).
#
# Layout under the prefix:
#   include/tcsolve/tcsolve.hpp                 umbrella header (cmake/tcsolve.hpp)
#   include/tcsolve/{core,io,spmm,solvers}/     the public headers, included as "core/csr.hpp"
#   lib/libtcsolve_*.a                          static libraries (position-independent)
#   lib/cmake/tcsolve/                          tcsolveConfig.cmake, version, targets
#   bin/tcsolve                                 the command (when Boost.Program_options exists)
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(TCSOLVE_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/tcsolve)
set(_tcsolve_libs tcsolve_core tcsolve_io tcsolve_preprocess tcsolve_spmm tcsolve_factor
    tcsolve_solvers)

# core/CMakeLists.txt puts the source root on tcsolve_core's public include path; installed, the
# headers live in include/tcsolve (for "core/csr.hpp") below include (for <tcsolve/tcsolve.hpp>).
set_property(TARGET tcsolve_core PROPERTY INTERFACE_INCLUDE_DIRECTORIES
             $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>
             $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/tcsolve>
             $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)

# The umbrella target tcsolve::tcsolve (`tcsolve` itself is the command's name). In the build
# tree the umbrella header is generated into build/include/tcsolve/.
configure_file(${CMAKE_CURRENT_LIST_DIR}/tcsolve.hpp ${PROJECT_BINARY_DIR}/include/tcsolve/tcsolve.hpp COPYONLY)
add_library(tcsolve_all INTERFACE)
target_link_libraries(tcsolve_all INTERFACE tcsolve_solvers tcsolve_factor tcsolve_spmm tcsolve_io
                      tcsolve_preprocess tcsolve_core)
target_include_directories(tcsolve_all INTERFACE $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/include>)
set_target_properties(tcsolve_all PROPERTIES EXPORT_NAME tcsolve)
add_library(tcsolve::tcsolve ALIAS tcsolve_all)
foreach(t ${_tcsolve_libs})
  string(REPLACE "tcsolve_" "" _short ${t})
  set_target_properties(${t} PROPERTIES EXPORT_NAME ${_short})  # tcsolve::core, tcsolve::io, ...
endforeach()

install(TARGETS ${_tcsolve_libs} tcsolve_all EXPORT tcsolveTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        COMPONENT dev)
if(TARGET tcsolve)
  install(TARGETS tcsolve RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT bin)
endif()

# The public API: what a consumer includes, and everything those headers include.
set(_tcsolve_public_headers
    core/csr.hpp core/device.hpp core/error.hpp core/multivector.hpp core/operator.hpp
    core/types.hpp
    io/matrix_io.hpp io/generators.hpp
    spmm/sparse_operator.hpp
    solvers/block_cg.hpp solvers/dense_ops.hpp solvers/eigensolvers.hpp solvers/eigs/eigs.hpp
    solvers/result.hpp
    # DenseBlockOps' parts (dense_ops.hpp includes them)
    solvers/dense/queue.hpp solvers/dense/small_dense.hpp solvers/cg/cg_kernels.hpp
    solvers/chebyshev/chebyshev_kernels.hpp)
foreach(h ${_tcsolve_public_headers})
  get_filename_component(_dir ${h} DIRECTORY)
  install(FILES ${PROJECT_SOURCE_DIR}/${h} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tcsolve/${_dir}
          COMPONENT dev)
endforeach()
install(FILES ${CMAKE_CURRENT_LIST_DIR}/tcsolve.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tcsolve
        COMPONENT dev)

install(EXPORT tcsolveTargets NAMESPACE tcsolve:: DESTINATION ${TCSOLVE_INSTALL_CMAKEDIR}
        COMPONENT dev)
set(TCSOLVE_HDF5_LIBRARIES "${HDF5_C_LIBRARIES}")
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/tcsolveConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/cmake/tcsolveConfig.cmake
                              INSTALL_DESTINATION ${TCSOLVE_INSTALL_CMAKEDIR})
# 0.x: a minor version may change the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cmake/tcsolveConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cmake/tcsolveConfig.cmake
              ${PROJECT_BINARY_DIR}/cmake/tcsolveConfigVersion.cmake
        DESTINATION ${TCSOLVE_INSTALL_CMAKEDIR} COMPONENT dev)
