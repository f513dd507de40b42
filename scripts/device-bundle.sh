#!/usr/bin/env bash
# Make .devdeps/: the C/C++ dependencies rlx builds against, as a relocatable prefix for a
# machine that lacks the Debian -dev packages (the lent GPU machine of scripts/device-check.sh:
# no apt, no internet, its own glibc). Run it here, before a device call:
#
#   bash scripts/device-bundle.sh [BUILD_DIR]     # BUILD_DIR (default build/) only read, for its deps
#   -> device call: run(command="bash scripts/device-check.sh", carry=[".devdeps"], timeout_s=560)
#
# .devdeps/ holds no shared library of the C++ packages (a .so built against this glibc may not
# load there); the two compiled C libraries come as static archives, linked into rlx there:
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
#   include/pcre2.h, include/utf8proc.h, lib/libpcre2-8.a, lib/libutf8proc.a
#                     PCRE2 (libpcre2-dev) and utf8proc (libutf8proc-dev), found by core/ with
#                     pkg_check_modules: Debian's static archives (position-independent: they link
#                     into a PIE or a .so; glibc symbols up to GLIBC_2.14; no .so next to them, so
#                     that -lpcre2-8 / find_library take the .a). Where an archive is missing, the
#                     .so with its soname links instead (then device-check.sh sets LD_LIBRARY_PATH).
#   lib/pkgconfig/libpcre2-8.pc, libutf8proc.pc   relocatable (prefix=${pcfiledir}/../..)
#   bin/pkg-config    a small python3 pkg-config (the queries CMake's FindPkgConfig makes, and the
#                     usual ones) for a machine without pkg-config/pkgconf
#   share/doc/<pkg>/copyright   the licences
# Use: cmake -DCMAKE_PREFIX_PATH=$PWD/.devdeps ... (the prefix path is searched before /usr; with
# it pkg_check_modules also reads .devdeps/lib/pkgconfig, and find_program(pkg-config) finds
# .devdeps/bin/pkg-config first: pass -DPKG_CONFIG_EXECUTABLE to use another), and
# PKG_CONFIG_PATH=$PWD/.devdeps/lib/pkgconfig for pkg-config outside CMake.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
dest=$root/.devdeps

command -v dpkg-query >/dev/null || { echo "device-bundle: needs a Debian/Ubuntu machine (dpkg)" >&2; exit 1; }

# The packages (header-only in the bundle) and the first header that must come from each.
boost_pkg=$(dpkg -S /usr/include/boost/version.hpp 2>/dev/null | cut -d: -f1) ||
  { echo "device-bundle: no Boost headers (/usr/include/boost/version.hpp)" >&2; exit 1; }
pkgs=(libfmt-dev libspdlog-dev libcxxopts-dev libtomlplusplus-dev nlohmann-json3-dev catch2 "$boost_pkg")
# The compiled C libraries: package, pkg-config module, library (lib<name>.a), headers.
clibs=("libpcre2-dev libpcre2-8 pcre2-8 pcre2.h" "libutf8proc-dev libutf8proc utf8proc utf8proc.h")
for p in "${pkgs[@]}" libpcre2-dev libutf8proc-dev; do
  dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q "install ok installed" ||
    { echo "device-bundle: package $p is not installed (scripts/setup-deps.sh)" >&2; exit 1; }
done
command -v python3 >/dev/null || { echo "device-bundle: needs python3 (to test bin/pkg-config)" >&2; exit 1; }
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

# 4. The compiled C libraries core/ finds with pkg_check_modules (libpcre2-8, libutf8proc): the
#    headers, the static archive (else the .so and its soname links), a relocatable .pc file.
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch 2>/dev/null ||
  echo x86_64-linux-gnu)
syslib=/usr/lib/$multiarch
mkdir -p "$dest/lib/pkgconfig" "$dest/bin"
clib_kinds=()
for entry in "${clibs[@]}"; do
  read -r pkg module lib hdr <<<"$entry"
  cp -p "/usr/include/$hdr" "$dest/include/$hdr"
  case $module in
    libpcre2-8) ver=$(awk '$2 == "PCRE2_MAJOR" {a=$3} $2 == "PCRE2_MINOR" {b=$3} END {print a "." b}' \
      "/usr/include/$hdr") ;;
    libutf8proc) ver=$(awk '$2 ~ /^UTF8PROC_VERSION_(MAJOR|MINOR|PATCH)$/ {v = v (v == "" ? "" : ".") $3}
      END {print v}' "/usr/include/$hdr") ;;  # (Debian's libutf8proc.pc says 2.6.0 for 2.8.0)
  esac
  [[ $ver =~ ^[0-9]+(\.[0-9]+)+$ ]] || ver=$(version "$pkg")
  desc=$(sed -n 's/^Description: *//p' "$syslib/pkgconfig/$module.pc" 2>/dev/null || true)
  if [[ -f $syslib/lib$lib.a ]]; then
    cp -p "$syslib/lib$lib.a" "$dest/lib/"
    kind=static
    # Static use: no dllimport/dllexport (both no-ops off Windows).
    case $module in libpcre2-8) defs=" -DPCRE2_STATIC" ;; libutf8proc) defs=" -DUTF8PROC_STATIC" ;; esac
  else
    # No archive: the shared library, its soname link and the dev link (built against this glibc:
    # it may need newer symbol versions than the device has; device-check.sh sets LD_LIBRARY_PATH).
    echo "device-bundle: warning: no $syslib/lib$lib.a: bundling lib$lib.so instead" >&2
    real=$(readlink -f "$syslib/lib$lib.so")
    [[ -f $real ]] || { echo "device-bundle: no $syslib/lib$lib.so either ($pkg)" >&2; exit 1; }
    soname=$(objdump -p "$real" 2>/dev/null | awk '$1 == "SONAME" {print $2}')
    cp -p "$real" "$dest/lib/"
    [[ -n $soname && $soname != "${real##*/}" ]] && ln -sf "${real##*/}" "$dest/lib/$soname"
    ln -sf "${soname:-${real##*/}}" "$dest/lib/lib$lib.so"
    kind=shared
    defs=
  fi
  clib_kinds+=("$module $ver ($kind)")
  cat >"$dest/lib/pkgconfig/$module.pc" <<EOF
# Written by scripts/device-bundle.sh from Debian's $pkg $(dpkg-query -W -f='${Version}' "$pkg"):
# lib$lib ($kind), relocatable: the prefix is two folders above this file.
prefix=\${pcfiledir}/../..
exec_prefix=\${prefix}
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: $module
Description: ${desc:-$module}
Version: $ver
Libs: -L\${libdir} -l$lib
Cflags: -I\${includedir}$defs
EOF
  if [[ -f /usr/share/doc/$pkg/copyright ]]; then
    mkdir -p "$dest/share/doc/$pkg"
    cp -p "/usr/share/doc/$pkg/copyright" "$dest/share/doc/$pkg/"
  fi
done

# The glibc symbols the libraries need: an archive's are bound where it is linked (to the version
# that glibc defines; here: the version this one gives them), a .so's are fixed already. Warn about
# any newer than GLIBC_2.17 (an older glibc on the device might lack it).
libc_so=$(gcc -print-file-name=libc.so.6 2>/dev/null || true)
[[ -f $libc_so ]] || libc_so=/lib/$multiarch/libc.so.6
if command -v nm >/dev/null && command -v objdump >/dev/null && [[ -f $libc_so ]]; then
  for a in "$dest"/lib/*.a "$dest"/lib/*.so.*; do
    [[ -f $a && ! -L $a ]] || continue
    if [[ $a == *.a ]]; then
      newest=$(nm -u "$a" 2>/dev/null | awk '{print $NF}' | sort -u |
        awk 'NR == FNR {want[$1] = 1; next}
             NF >= 2 && ($NF in want) && $(NF - 1) ~ /^GLIBC_[0-9]/ && $0 !~ /\(GLIBC/ {print $(NF - 1), $NF}' \
          - <(objdump -T "$libc_so") | sort -t_ -k2,2V | tail -n 1)
    else
      newest=$(objdump -T "$a" | grep -F '*UND*' | grep -o 'GLIBC_[0-9][0-9.]*' | sort -uV | tail -n 1)
    fi
    echo "device-bundle: ${a##*/}: newest glibc symbol version it needs: ${newest:-none}"
    v=${newest%% *}; v=${v#GLIBC_}
    if [[ -n $newest ]] && [[ $(printf '%s\n' "$v" 2.17 | sort -V | tail -n 1) != 2.17 ]]; then
      echo "device-bundle: warning: ${a##*/} needs $newest (newer than GLIBC_2.17)" >&2
    fi
  done
fi

# bin/pkg-config: for a machine without pkg-config (CMake's FindPkgConfig needs the program).
cat >"$dest/bin/pkg-config" <<'EOF'
#!/usr/bin/env python3
"""A small pkg-config, written by rlx's scripts/device-bundle.sh into .devdeps/bin, for a machine
without pkg-config/pkgconf. It reads .pc files from PKG_CONFIG_PATH, then PKG_CONFIG_LIBDIR (or
the usual system folders), and answers what CMake's FindPkgConfig asks (--version, --exists,
--print-errors, --short-errors, --modversion, --variable=NAME, --cflags[-only-I|-only-other],
--libs[-only-L|-only-l|-only-other], --static; "name >= version" specs) and a few more
(--atleast-version, --exact-version, --max-version, --print-variables, --print-requires,
--list-all, --define-variable, --silence-errors, --errors-to-stdout, --keep-system-*)."""
import os
import re
import sys

VERSION = "0.29.2"  # the pkg-config whose query interface this follows
SYSTEM_DIRS = ["/usr/local/lib/x86_64-linux-gnu/pkgconfig", "/usr/local/lib/pkgconfig",
               "/usr/local/share/pkgconfig", "/usr/lib/x86_64-linux-gnu/pkgconfig",
               "/usr/lib64/pkgconfig", "/usr/lib/pkgconfig", "/usr/share/pkgconfig"]
SYSTEM_INCLUDES = ["/usr/include"]
SYSTEM_LIBDIRS = ["/usr/lib", "/lib", "/usr/lib64", "/lib64", "/usr/lib/x86_64-linux-gnu",
                  "/lib/x86_64-linux-gnu"]
OPS = ("<=", ">=", "!=", "=", "<", ">")


class Error(Exception):
    pass


def search_dirs():
    dirs = [d for d in os.environ.get("PKG_CONFIG_PATH", "").split(os.pathsep) if d]
    libdir = os.environ.get("PKG_CONFIG_LIBDIR")
    dirs += [d for d in libdir.split(os.pathsep) if d] if libdir is not None else SYSTEM_DIRS
    return dirs


def vercmp(a, b):
    """rpm-style: numeric runs compare as numbers, alpha runs as strings, numbers win."""
    ta, tb = re.findall(r"\d+|[A-Za-z]+", a), re.findall(r"\d+|[A-Za-z]+", b)
    for x, y in zip(ta, tb):
        if x.isdigit() and y.isdigit():
            x, y = int(x), int(y)
        elif x.isdigit() != y.isdigit():
            return 1 if x.isdigit() else -1
        if x != y:
            return 1 if x > y else -1
    return (len(ta) > len(tb)) - (len(ta) < len(tb))


def version_ok(have, op, want):
    c = vercmp(have, want)
    return {"<=": c <= 0, ">=": c >= 0, "!=": c != 0, "=": c == 0, "<": c < 0, ">": c > 0}[op]


def split_flags(text):
    """Shell-like words (quotes, backslashes), as pkg-config splits Cflags/Libs."""
    words, cur, quote, have, i = [], [], None, False, 0
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == quote:
                quote = None
            elif ch == "\\" and quote == '"' and i + 1 < len(text) and text[i + 1] in '"\\$`':
                i += 1
                cur.append(text[i])
            else:
                cur.append(ch)
        elif ch in "'\"":
            quote, have = ch, True
        elif ch == "\\" and i + 1 < len(text):
            i += 1
            cur.append(text[i])
            have = True
        elif ch.isspace():
            if cur or have:
                words.append("".join(cur))
            cur, have = [], False
        else:
            cur.append(ch)
        i += 1
    if cur or have:
        words.append("".join(cur))
    return words


def quote(word):
    return re.sub(r"([^A-Za-z0-9_@%+=:,./-])", r"\\\1", word) if word else "''"


def parse_specs(text):
    """'a >= 1, b' -> [(a, >=, 1), (b, None, None)]"""
    toks = re.findall(r"<=|>=|!=|=|<|>|[^\s,<>=!]+", text)
    out, i = [], 0
    while i < len(toks):
        name, op, ver = toks[i], None, None
        if i + 1 < len(toks) and toks[i + 1] in OPS:
            if i + 2 >= len(toks):
                raise Error(f"Comparison operator but no version after package name '{name}'")
            op, ver = toks[i + 1], toks[i + 2]
            i += 2
        out.append((name, op, ver))
        i += 1
    return out


class Package:
    def __init__(self, name, path, overrides):
        self.name, self.path = name, path
        self.vars = {"pcfiledir": os.path.dirname(os.path.abspath(path))}
        self.raw = {}
        self.fields = {}
        self.overrides = overrides
        text = open(path, encoding="utf-8", errors="replace").read()
        text = re.sub(r"\\\r?\n", "", text)  # line continuations
        for line in text.splitlines():
            line = re.sub(r"(?<!\\)#.*", "", line).replace("\\#", "#").strip()
            m = re.match(r"([A-Za-z0-9_.]+)\s*([:=])\s*(.*)$", line)
            if not m:
                continue
            key, kind, value = m.groups()
            if kind == "=":
                if key not in self.vars or key == "pcfiledir":
                    self.raw[key] = value.strip()
            else:
                self.fields[key.lower()] = value.strip()
        self.version = self.field("version")

    def var(self, key, depth=0):
        if key in self.overrides:
            return self.overrides[key]
        if key == "pcfiledir":
            return self.vars["pcfiledir"]
        if key not in self.raw:
            return ""
        if depth > 50:
            raise Error(f"Variable '{key}' in {self.path} expands recursively")
        return self.expand(self.raw[key], depth + 1)

    def expand(self, value, depth=0):
        out, i = [], 0
        while i < len(value):
            if value.startswith("$$", i):
                out.append("$")
                i += 2
            elif value.startswith("${", i) and "}" in value[i:]:
                j = value.index("}", i)
                out.append(self.var(value[i + 2:j], depth))
                i = j + 1
            else:
                out.append(value[i])
                i += 1
        return "".join(out)

    def field(self, key):
        return self.expand(self.fields.get(key, ""))

    def flags(self, key):
        words = split_flags(self.field(key))
        # "-I dir" as "-Idir"; -I/-L paths normalized (the relocatable prefix is ../.. of a dir)
        out, i = [], 0
        while i < len(words):
            w = words[i]
            if w in ("-I", "-L") and i + 1 < len(words):
                i += 1
                w += words[i]
            if w[:2] in ("-I", "-L") and w[2:3] == "/":
                w = w[:2] + os.path.normpath(w[2:])
            out.append(w)
            i += 1
        return out


class Db:
    def __init__(self, overrides):
        self.cache, self.overrides = {}, overrides

    def find(self, name):
        if name in self.cache:
            return self.cache[name]
        path = None
        if name.endswith(".pc") and os.path.isfile(name):
            path, name = name, os.path.basename(name)[:-3]
        else:
            for d in search_dirs():
                f = os.path.join(d, name + ".pc")
                if os.path.isfile(f):
                    path = f
                    break
        pkg = Package(name, path, self.overrides) if path else None
        self.cache[name] = pkg
        return pkg

    def resolve(self, specs, private, seen=None, order=None):
        """The packages and everything they require (Requires, and Requires.private if asked),
        depth first; a missing package or a failed version test raises Error."""
        seen = set() if seen is None else seen
        order = [] if order is None else order
        for name, op, ver in specs:
            pkg = self.find(name)
            if pkg is None:
                raise Error(f"Package '{name}' not found" if op is None else
                            f"Package '{name}' not found (wanted {op} {ver})")
            if op and not version_ok(pkg.version, op, ver):
                raise Error(f"Requested '{name} {op} {ver}' but version of "
                            f"{pkg.field('name') or name} is {pkg.version}")
            if name in seen:
                continue
            seen.add(name)
            order.append(pkg)
            req = parse_specs(pkg.field("requires"))
            if private:
                req += parse_specs(pkg.field("requires.private"))
            self.resolve(req, private, seen, order)
        return order


def dedupe(words):
    """Each -I / -L once (the first)."""
    out, seen = [], set()
    for w in words:
        if (w.startswith("-I") or w.startswith("-L")) and w in seen:
            continue
        seen.add(w)
        out.append(w)
    return out


def main(argv):
    opts, specs_text = {}, []
    overrides = {}
    want = []       # the flag queries, in pkg-config's output order
    i = 0
    while i < len(argv):
        a = argv[i]
        if a.startswith("--"):
            key, eq, val = a.partition("=")
            if key in ("--variable", "--define-variable", "--atleast-version", "--exact-version",
                       "--max-version", "--atleast-pkgconfig-version") and not eq:
                i += 1
                if i >= len(argv):
                    raise Error(f"option {key} needs a value")
                val = argv[i]
            if key == "--define-variable":
                k, _, v = val.partition("=")
                overrides[k] = v
            elif key in ("--cflags", "--cflags-only-I", "--cflags-only-other", "--libs",
                         "--libs-only-L", "--libs-only-l", "--libs-only-other"):
                want.append(key)
            elif key in ("--version", "--modversion", "--exists", "--print-errors",
                         "--short-errors", "--silence-errors", "--errors-to-stdout", "--static",
                         "--print-variables", "--print-requires", "--print-requires-private",
                         "--list-all", "--keep-system-cflags", "--keep-system-libs", "--help",
                         "--about", "--define-prefix", "--dont-define-prefix", "--debug",
                         "--validate", "--shared", "--uninstalled", "--print-provides"):
                opts[key] = True
            elif key in ("--variable", "--atleast-version", "--exact-version", "--max-version",
                         "--atleast-pkgconfig-version"):
                opts[key] = val
            else:
                raise Error(f"Unknown option {a}")
        else:
            specs_text.append(a)
        i += 1
    return run(opts, want, specs_text, overrides)


def run(opts, want, specs_text, overrides):
    if opts.get("--version"):
        print(VERSION)
        return 0
    if opts.get("--help") or opts.get("--about"):
        print(__doc__)
        return 0
    if "--atleast-pkgconfig-version" in opts:
        return 0 if vercmp(VERSION, opts["--atleast-pkgconfig-version"]) >= 0 else 1
    db = Db(overrides)
    if opts.get("--list-all"):
        seen = set()
        for d in search_dirs():
            if os.path.isdir(d):
                for f in sorted(os.listdir(d)):
                    if f.endswith(".pc") and f[:-3] not in seen:
                        seen.add(f[:-3])
                        pkg = db.find(f[:-3])
                        print(f"{f[:-3]:<30} {pkg.field('name')} - {pkg.field('description')}")
        return 0
    if opts.get("--uninstalled"):
        return 1
    specs = parse_specs(" ".join(specs_text))
    if not specs:
        raise Error("Must specify package names on the command line")
    static = bool(opts.get("--static"))
    pkgs = db.resolve(specs, private=static or any(w.startswith("--cflags") for w in want))
    top = [db.find(n) for n, _, _ in specs]
    for key, op in (("--atleast-version", ">="), ("--exact-version", "="), ("--max-version", "<=")):
        if key in opts:
            return 0 if all(version_ok(p.version, op, opts[key]) for p in top) else 1
    if opts.get("--exists") or opts.get("--validate"):
        return 0
    lines = []
    if opts.get("--modversion"):
        lines += [p.version for p in top]
    if "--variable" in opts:
        lines.append(" ".join(p.var(opts["--variable"]) for p in top))
    if opts.get("--print-variables"):
        for p in top:
            lines += sorted(set(p.raw) | {"pcfiledir"})
    for key in ("--print-requires", "--print-requires-private"):
        if opts.get(key):
            field = "requires" if key == "--print-requires" else "requires.private"
            for p in top:
                lines += [n + (f" {o} {v}" if o else "") for n, o, v in parse_specs(p.field(field))]
    if opts.get("--print-provides"):
        lines += [f"{p.name} = {p.version}" for p in top]
    if want:
        keep_i = opts.get("--keep-system-cflags") or os.environ.get("PKG_CONFIG_ALLOW_SYSTEM_CFLAGS")
        keep_l = opts.get("--keep-system-libs") or os.environ.get("PKG_CONFIG_ALLOW_SYSTEM_LIBS")
        cflags, libs = [], []
        for p in pkgs:
            cflags += p.flags("cflags")
            libs += p.flags("libs")
            if static:
                libs += p.flags("libs.private")
        cflags = [w for w in dedupe(cflags) if keep_i or not (
            w.startswith("-I") and os.path.normpath(w[2:]) in SYSTEM_INCLUDES)]
        libs = [w for w in dedupe(libs) if keep_l or not (
            w.startswith("-L") and os.path.normpath(w[2:]) in SYSTEM_LIBDIRS)]
        parts = []
        sel = {
            "--cflags": (cflags, lambda w: True),
            "--cflags-only-I": (cflags, lambda w: w.startswith("-I")),
            "--cflags-only-other": (cflags, lambda w: not w.startswith("-I")),
            "--libs": (libs, lambda w: True),
            "--libs-only-L": (libs, lambda w: w.startswith("-L")),
            "--libs-only-l": (libs, lambda w: w.startswith("-l")),
            "--libs-only-other": (libs, lambda w: not w.startswith(("-L", "-l"))),
        }
        # cflags before libs, each word once
        for group in ("--cflags", "--cflags-only-I", "--cflags-only-other",
                      "--libs", "--libs-only-L", "--libs-only-l", "--libs-only-other"):
            if group in want:
                words, keep = sel[group]
                parts += [w for w in words if keep(w) and w not in parts]
        lines.append(" ".join(quote(w) for w in parts))
    for line in lines:
        print(line)
    return 0


if __name__ == "__main__":
    args = sys.argv[1:]
    try:
        sys.exit(main(args))
    except Error as e:
        quiet = "--silence-errors" in args or ("--exists" in args and "--print-errors" not in args)
        if not quiet:
            stream = sys.stdout if "--errors-to-stdout" in args else sys.stderr
            msg = str(e)
            if "--short-errors" not in args and "not found" in msg:
                msg += ("\nPerhaps you should add the directory containing the .pc file to the "
                        "PKG_CONFIG_PATH environment variable")
            print(msg, file=stream)
        sys.exit(1)
    except OSError as e:
        print(f"pkg-config: {e}", file=sys.stderr)
        sys.exit(1)
EOF
chmod +x "$dest/bin/pkg-config"
# Check it: the bundle's own .pc files, the bundle's paths.
for entry in "${clibs[@]}"; do
  read -r pkg module lib hdr <<<"$entry"
  got=$(PKG_CONFIG_PATH=$dest/lib/pkgconfig PKG_CONFIG_LIBDIR=/nonexistent \
    python3 "$dest/bin/pkg-config" --print-errors --cflags --libs "$module") ||
    { echo "device-bundle: bin/pkg-config failed on $module.pc" >&2; exit 1; }
  [[ " $got " == *" -I$dest/include "* && " $got " == *" -L$dest/lib -l$lib "* ]] ||
    { echo "device-bundle: bin/pkg-config: unexpected flags for $module: $got" >&2; exit 1; }
done
echo "device-bundle: compiled C libraries: ${clib_kinds[*]}"

# 5. Ignored by git, carried by the device call.
exclude=$(git -C "$root" rev-parse --git-path info/exclude)
[[ $exclude == /* ]] || exclude=$root/$exclude
mkdir -p "$(dirname "$exclude")"
grep -qxF '/.devdeps/' "$exclude" 2>/dev/null || echo '/.devdeps/' >>"$exclude"

size=$(du -sb "$dest" | cut -f1)
printf 'device-bundle: %s: %d files, %.1f MiB (header-only: %s; pkg-config: %s)\n' "$dest" \
  "$(find "$dest" -type f | wc -l)" "$(echo "$size / 1048576" | bc -l)" \
  "$(cd "$dest/lib/cmake" && echo *)" "$(cd "$dest/lib/pkgconfig" && echo *)"
if ((size > 20 * 1048576)); then
  echo "device-bundle: warning: over 20 MiB" >&2
fi
