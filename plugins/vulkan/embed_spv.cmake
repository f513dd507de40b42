# cmake -DIN=x.spv -DOUT=x.h -DNAME=kSpv_x -P embed_spv.cmake
# Writes the SPIR-V words of IN as `inline constexpr uint32_t NAME[] = {...};` (little-endian,
# as glslc writes them on every host rlx builds on).
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" n)
math(EXPR rem "${n} % 8")
if(NOT rem EQUAL 0 OR n EQUAL 0)
  message(FATAL_ERROR "${IN}: not a whole number of 32-bit words")
endif()
# 8 hex digits = one word, bytes in file order b0 b1 b2 b3 -> 0xb3b2b1b0.
string(REGEX REPLACE "([0-9a-f][0-9a-f])([0-9a-f][0-9a-f])([0-9a-f][0-9a-f])([0-9a-f][0-9a-f])"
       "0x\\4\\3\\2\\1u," words "${hex}")
string(REGEX REPLACE "((0x[0-9a-f]+u,){8})" "\\1\n" words "${words}")
file(WRITE "${OUT}" "// Generated from ${IN} by embed_spv.cmake; do not edit.\n#pragma once\n#include <cstdint>\ninline constexpr uint32_t ${NAME}[] = {\n${words}\n};\n")
