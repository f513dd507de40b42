# rlx_add_plugin(<backend|model> <name> [VARIANT <v>] SOURCES <files...> [OPTIONS <compile options>])
#
# Builds one plugin as a MODULE library named librlx-<kind>-<name>[-<variant>].so with hidden
# visibility (only rlx_plugin_query is exported) into RLX_PLUGIN_OUTPUT_DIR, and installs it to
# lib/rlx/plugins. Shipped with the SDK so out-of-tree plugins are built the same way.
include_guard(GLOBAL)

function(rlx_add_plugin kind name)
  cmake_parse_arguments(P "" "VARIANT;TARGET" "SOURCES;OPTIONS;LIBRARIES" ${ARGN})
  if(NOT kind MATCHES "^(backend|model)$")
    message(FATAL_ERROR "rlx_add_plugin: kind must be backend or model, got '${kind}'")
  endif()
  set(out "rlx-${kind}-${name}")
  if(P_VARIANT)
    string(APPEND out "-${P_VARIANT}")
  endif()
  set(target "${out}")
  if(P_TARGET)
    set(target "${P_TARGET}")
  endif()
  add_library(${target} MODULE ${P_SOURCES})
  set_target_properties(${target} PROPERTIES
    OUTPUT_NAME "${out}"
    PREFIX "lib"
    CXX_VISIBILITY_PRESET hidden
    C_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  if(RLX_PLUGIN_OUTPUT_DIR)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY "${RLX_PLUGIN_OUTPUT_DIR}")
  endif()
  target_compile_features(${target} PRIVATE cxx_std_20)
  target_compile_options(${target} PRIVATE ${P_OPTIONS})
  target_link_libraries(${target} PRIVATE rlx::plugin_abi ${P_LIBRARIES})
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # STB_GNU_UNIQUE symbols (statics in inline functions) make dlclose a no-op; unloading a
    # plugin must really unmap it.
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:C,CXX>:-fno-gnu-unique>)
  endif()
  if(NOT APPLE AND NOT WIN32)
    # A plugin must not resolve symbols from whoever loads it, nor leave any undefined.
    target_link_options(${target} PRIVATE "LINKER:--no-undefined" "LINKER:-Bsymbolic")
  endif()
  if(NOT RLX_PLUGIN_NO_INSTALL)
    install(TARGETS ${target} LIBRARY DESTINATION "${RLX_PLUGIN_INSTALL_DIR}")
  endif()
  set(RLX_LAST_PLUGIN_TARGET ${target} PARENT_SCOPE)
endfunction()
