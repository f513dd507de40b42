# RLX_FUZZ=ON: libFuzzer targets (tests/fuzz). Everything is compiled with coverage
# instrumentation and ASan+UBSan, so the core the fuzzers link is checked as well; the fuzz
# targets themselves add -fsanitize=fuzzer at link time (tests/fuzz/CMakeLists.txt).
# Clang only (libFuzzer ships with clang; on Debian: libclang-rt-<N>-dev).
if(NOT RLX_FUZZ)
  return()
endif()
if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "RLX_FUZZ=ON needs clang (libFuzzer); the C++ compiler is "
    "${CMAKE_CXX_COMPILER_ID}. Configure with CC=clang-15 CXX=clang++-15 (scripts/fuzz.sh does).")
endif()
if(NOT RLX_BUILD_TESTS)
  message(FATAL_ERROR "RLX_FUZZ=ON needs RLX_BUILD_TESTS=ON (the fuzz targets live in tests/fuzz)")
endif()
set(RLX_FUZZ_SANITIZERS address,undefined)
add_compile_options(-fsanitize=fuzzer-no-link,${RLX_FUZZ_SANITIZERS}
  -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g)
add_link_options(-fsanitize=${RLX_FUZZ_SANITIZERS} -fno-sanitize-recover=undefined)
