# ctest sdk_third_party_plugin: install rlx into a scratch prefix, build examples/sample_backend
# against it with find_package(rlx), and check that the installed `rlx devices` finds both the
# installed cpu backend (lib/rlx/plugins next to bin/) and the sample via RLX_PLUGIN_PATH.
# Inputs: SOURCE_DIR, BUILD_DIR, WORK_DIR.
file(REMOVE_RECURSE "${WORK_DIR}")
set(prefix "${WORK_DIR}/prefix")

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}")
  endif()
  set(run_output "${out}" PARENT_SCOPE)
endfunction()

run(${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${prefix}")
run(${CMAKE_COMMAND} -S "${SOURCE_DIR}/examples/sample_backend" -B "${WORK_DIR}/sample"
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release)
run(${CMAKE_COMMAND} --build "${WORK_DIR}/sample")
run(${CMAKE_COMMAND} -E env RLX_PLUGIN_PATH=${WORK_DIR}/sample/plugins RLX_LOG_LEVEL=warn
    "${prefix}/bin/rlx" devices)
message("${run_output}")
foreach(expect "sample" "sample host device" "cpu:0" "${prefix}/lib/rlx/plugins")
  string(FIND "${run_output}" "${expect}" pos)
  if(pos EQUAL -1)
    message(FATAL_ERROR "`rlx devices` output lacks '${expect}'")
  endif()
endforeach()
# A clean install loads every plugin; a GPU backend on a machine without that GPU may only say
# it has no device.
string(FIND "${run_output}" "rejected:\n" at)
if(at EQUAL -1)
  message(FATAL_ERROR "`rlx devices` printed no 'rejected:' section")
endif()
string(SUBSTRING "${run_output}" ${at} -1 rejected)
string(REPLACE "\n" ";" rejected_lines "${rejected}")
foreach(line IN LISTS rejected_lines)
  if(line MATCHES "^  " AND NOT line MATCHES "^  \\(none\\)$"
     AND NOT line MATCHES "unavailable: device probe failed \\(no device\\)")
    message(FATAL_ERROR "`rlx devices` rejected a plugin in a clean install: ${line}")
  endif()
endforeach()
