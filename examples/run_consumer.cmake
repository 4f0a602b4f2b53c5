# cmake -DBUILD_DIR=... -DWORK_DIR=... -DSOURCE_DIR=... -DGENERATOR=... -DCXX_COMPILER=...
#       [-DBUILD_TYPE=...] [-DPYTHON=... -DPYTHON_DIR=...] -P run_consumer.cmake
# 1. cmake --install BUILD_DIR --prefix WORK_DIR/prefix   (a fresh prefix each time)
# 2. configure + build SOURCE_DIR against it, run the program (it checks its own answers)
# 3. import tcsolve from WORK_DIR/prefix/PYTHON_DIR and solve one small problem
# Any failing step stops the test with its output.
function(step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message(STATUS "${what}:\n${out}${err}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (exit ${rc})")
  endif()
endfunction()

set(prefix ${WORK_DIR}/prefix)
file(REMOVE_RECURSE ${WORK_DIR})
step("install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
foreach(f include/tcsolve/tcsolve.hpp include/tcsolve/solvers/eigs/eigs.hpp lib/cmake/tcsolve/tcsolveConfig.cmake)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "install tree lacks ${f}")
  endif()
endforeach()
if(NOT BUILD_TYPE)
  set(BUILD_TYPE Release)
endif()
step("configure consumer" ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/build -G ${GENERATOR}
     -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_BUILD_TYPE=${BUILD_TYPE}
     -DCMAKE_PREFIX_PATH=${prefix})
step("build consumer" ${CMAKE_COMMAND} --build ${WORK_DIR}/build)
step("run consumer" ${WORK_DIR}/build/modes gen:lap2d:30 4)

if(PYTHON AND PYTHON_DIR)
  # Run from WORK_DIR so that neither the source nor the build tree's package can be imported.
  step("import installed Python package"
       ${CMAKE_COMMAND} -E chdir ${WORK_DIR}
       ${CMAKE_COMMAND} -E env PYTHONPATH=${prefix}/${PYTHON_DIR}
       ${PYTHON} ${CMAKE_CURRENT_LIST_DIR}/check_installed_python.py ${prefix})
endif()
