#!/usr/bin/env bash
# Make .devdeps/: the C++ dependencies rlx builds against, as a relocatable, header-only prefix
# for a machine that lacks the Debian -dev packages (the lent GPU machine of
# scripts/device-check.sh: no apt, no internet, its own glibc). Run it here, before a device call:
#
#   bash scripts/device-bundle.sh [BUILD_DIR]     # BUILD_DIR (default build/) only read, for its deps
#   -> device call: run(command="bash scripts/device-check.sh", carry=[".devdeps"], timeout_s=560)
#
# .devdeps/ holds no compiled library (a .so built against this glibc may not load there):
#   include/          fmt, spdlog, cxxopts, toml++, nlohmann/json, Catch2 v2 (every header of those
#                     packages) and the Boost modules rlx's objects include (Boost.DLL and what it
#                     pulls in), taken from the files under /usr/include that BUILD_DIR's objects read
#                     (`ninja -t deps`), whole module folders so that other compilers' branches work
#   lib/cmake/<Pkg>/  hand-written <Pkg>Config.cmake + <Pkg>ConfigVersion.cmake defining the
#                     targets rlx's CMake uses as INTERFACE IMPORTED, header-only:
#                     fmt::fmt (FMT_HEADER_ONLY), spdlog::spdlog (no SPDLOG_COMPILED_LIB: header-only,
#                     SPDLOG_FMT_EXTERNAL: on the bundled fmt), cxxopts::cxxopts,
#                     tomlplusplus::tomlplusplus (TOML_HEADER_ONLY=1), nlohmann_json::nlohmann_json,
#                     Boost::headers, Catch2::Catch2 (+ Catch.cmake for include(Catch))
#   share/doc/<pkg>/copyright   the licences
# Use: cmake -DCMAKE_PREFIX_PATH=$PWD/.devdeps ... (the prefix path is searched before /usr).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
dest=$root/.devdeps

command -v dpkg-query >/dev/null || { echo "device-bundle: needs a Debian/Ubuntu machine (dpkg)" >&2; exit 1; }

# The packages (header-only in the bundle) and the first header that must come from each.
boost_pkg=$(dpkg -S /usr/include/boost/version.hpp 2>/dev/null | cut -d: -f1) ||
  { echo "device-bundle: no Boost headers (/usr/include/boost/version.hpp)" >&2; exit 1; }
pkgs=(libfmt-dev libspdlog-dev libcxxopts-dev libtomlplusplus-dev nlohmann-json3-dev catch2 "$boost_pkg")
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q "install ok installed" ||
    { echo "device-bundle: package $p is not installed (scripts/setup-deps.sh)" >&2; exit 1; }
done
version() {  # Debian version -> upstream x.y.z: drop the epoch, +ds / -revision suffixes
  dpkg-query -W -f='${Version}' "$1" | sed -E 's/^[0-9]+://; s/[-+~].*$//'
}

# 1. The headers the build read, from the package list above.
headers=()
if [[ -f $build/build.ninja ]] && command -v ninja >/dev/null; then
  # Read-only query of the build's dependency log (nothing is built).
  mapfile -t headers < <(ninja -C "$build" -t deps 2>/dev/null |
    awk '$1 ~ /^\/usr\/include\// {print $1}' | sort -u)
fi
declare -A used_pkg=()
boost_parts=()
if ((${#headers[@]})); then
  echo "device-bundle: ${#headers[@]} headers under /usr/include in $build's deps"
  # dpkg -S answers "pkg[:arch]: path" per header; keep those of our packages.
  while IFS= read -r line; do
    pkg=${line%%: *}; pkg=${pkg%%:*}; path=${line#*: }
    for p in "${pkgs[@]}"; do
      if [[ $pkg == "$p" ]]; then
        used_pkg[$p]=1
        if [[ $p == "$boost_pkg" ]]; then
          rel=${path#/usr/include/}
          IFS=/ read -r -a parts <<<"$rel"
          if ((${#parts[@]} > 2)); then boost_parts+=("${parts[0]}/${parts[1]}"); else boost_parts+=("$rel"); fi
        fi
      fi
    done
  done < <(dpkg -S "${headers[@]}" 2>/dev/null || true)
  for p in "${pkgs[@]}"; do
    [[ ${used_pkg[$p]:-} ]] || echo "device-bundle: note: $build's objects read no header of $p (bundled anyway)"
  done
else
  echo "device-bundle: no ninja deps in $build: using the built-in Boost module list"
fi
if ((${#boost_parts[@]} == 0)); then
  # What Boost.DLL (std::filesystem flavour) reads with Debian 12's gcc and Boost 1.74.
  boost_parts=(boost/predef boost/type_traits boost/config boost/move boost/dll boost/core
    boost/exception boost/detail boost/assert boost/version.hpp boost/throw_exception.hpp
    boost/swap.hpp boost/static_assert.hpp boost/current_function.hpp boost/cstdint.hpp
    boost/config.hpp boost/assert.hpp)
fi
mapfile -t boost_parts < <(printf '%s\n' "${boost_parts[@]}" | sort -u)

rm -rf "$dest"
mkdir -p "$dest/include" "$dest/lib/cmake" "$dest/share/doc"

# 2. Copy: every header of the small packages, the used Boost modules whole.
for p in "${pkgs[@]}"; do
  if [[ $p != "$boost_pkg" ]]; then
    dpkg -L "$p" | while IFS= read -r f; do
      [[ $f == /usr/include/* && -f $f ]] || continue
      rel=${f#/usr/include/}
      mkdir -p "$dest/include/$(dirname "$rel")"
      cp -p "$f" "$dest/include/$rel"
    done
  fi
  if [[ -f /usr/share/doc/$p/copyright ]]; then
    mkdir -p "$dest/share/doc/$p"
    cp -p "/usr/share/doc/$p/copyright" "$dest/share/doc/$p/"
  fi
done
for part in "${boost_parts[@]}"; do
  mkdir -p "$dest/include/$(dirname "$part")"
  cp -a "/usr/include/$part" "$dest/include/$part"
done
echo "device-bundle: Boost parts: ${boost_parts[*]}"

# 3. CMake package files.
write_version() {  # <dir> <name> <version>
  cat >"$1/$2ConfigVersion.cmake" <<EOF
# Written by scripts/device-bundle.sh: $2 $3 (header-only bundle). Any version >= the one asked.
set(PACKAGE_VERSION "$3")
if(PACKAGE_FIND_VERSION AND PACKAGE_VERSION VERSION_LESS PACKAGE_FIND_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
else()
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
  if(PACKAGE_FIND_VERSION AND PACKAGE_VERSION VERSION_EQUAL PACKAGE_FIND_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
endif()
EOF
}
# write_config <name> <version> <cmake body>: the body sees _devdeps_include.
write_config() {
  local d=$dest/lib/cmake/$1
  mkdir -p "$d"
  cat >"$d/$1Config.cmake" <<EOF
# Written by scripts/device-bundle.sh: $1 $2 from Debian's headers, header-only, relocatable.
get_filename_component(_devdeps_include "\${CMAKE_CURRENT_LIST_DIR}/../../../include" ABSOLUTE)
$3
set($1_FOUND TRUE)
set($1_VERSION "$2")
EOF
  write_version "$d" "$1" "$2"
}
iface() {  # <target> <compile definitions;...> [linked targets]: an INTERFACE IMPORTED target
  cat <<EOF
if(NOT TARGET $1)
  add_library($1 INTERFACE IMPORTED)
  set_target_properties($1 PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "\${_devdeps_include}"
    INTERFACE_COMPILE_DEFINITIONS "$2"
    INTERFACE_LINK_LIBRARIES "${3:-}")
endif()
EOF
}

write_config fmt "$(version libfmt-dev)" "$(iface fmt::fmt 'FMT_HEADER_ONLY=1')
$(iface fmt::fmt-header-only '' fmt::fmt)"

write_config spdlog "$(version libspdlog-dev)" "include(CMakeFindDependencyMacro)
find_dependency(fmt)
# No SPDLOG_COMPILED_LIB: spdlog/common.h then defines SPDLOG_HEADER_ONLY itself.
$(iface spdlog::spdlog 'SPDLOG_FMT_EXTERNAL' fmt::fmt)
$(iface spdlog::spdlog_header_only '' spdlog::spdlog)"

write_config cxxopts "$(version libcxxopts-dev)" "$(iface cxxopts::cxxopts '')"

write_config tomlplusplus "$(version libtomlplusplus-dev)" "$(iface tomlplusplus::tomlplusplus 'TOML_HEADER_ONLY=1')"

write_config nlohmann_json "$(version nlohmann-json3-dev)" "$(iface nlohmann_json::nlohmann_json '')"

boost_v=$(version "$boost_pkg")
write_config Boost "$boost_v" "$(iface Boost::headers '')
$(iface Boost::boost '' Boost::headers)
set(Boost_INCLUDE_DIRS \"\${_devdeps_include}\")
set(Boost_INCLUDE_DIR \"\${_devdeps_include}\")
set(Boost_VERSION_STRING \"$boost_v\")
set(Boost_LIBRARIES \"\")
# Headers only: a compiled component cannot be had from this bundle.
foreach(_c IN LISTS Boost_FIND_COMPONENTS)
  if(NOT _c STREQUAL \"headers\")
    set(Boost_\${_c}_FOUND FALSE)
    if(Boost_FIND_REQUIRED_\${_c})
      set(Boost_NOT_FOUND_MESSAGE \"Boost component \${_c} is not in the header-only .devdeps bundle\")
      set(Boost_FOUND FALSE)
      return()
    endif()
  endif()
endforeach()
set(Boost_headers_FOUND TRUE)"

write_config Catch2 "$(version catch2)" "$(iface Catch2::Catch2 '')
# include(Catch) / catch_discover_tests
list(APPEND CMAKE_MODULE_PATH \"\${CMAKE_CURRENT_LIST_DIR}\")"
for m in Catch.cmake CatchAddTests.cmake ParseAndAddCatchTests.cmake; do
  f=$(dpkg -L catch2 | grep "/$m\$" | head -n1 || true)
  [[ -n $f ]] && cp -p "$f" "$dest/lib/cmake/Catch2/"
done

# 4. Ignored by git, carried by the device call.
exclude=$(git -C "$root" rev-parse --git-path info/exclude)
[[ $exclude == /* ]] || exclude=$root/$exclude
mkdir -p "$(dirname "$exclude")"
grep -qxF '/.devdeps/' "$exclude" 2>/dev/null || echo '/.devdeps/' >>"$exclude"

size=$(du -sb "$dest" | cut -f1)
printf 'device-bundle: %s: %d files, %.1f MiB (header-only: %s)\n' "$dest" \
  "$(find "$dest" -type f | wc -l)" "$(echo "$size / 1048576" | bc -l)" \
  "$(cd "$dest/lib/cmake" && echo *)"
if ((size > 20 * 1048576)); then
  echo "device-bundle: warning: over 20 MiB" >&2
fi
