# The cuda backend's sources, shared by plugins/cuda, plugins/rocm and plugins/cudaemu.
set(RLX_GPU_DIR "${CMAKE_CURRENT_LIST_DIR}")
set(RLX_GPU_KERNELS
  ${RLX_GPU_DIR}/kernels/elementwise.cu
  ${RLX_GPU_DIR}/kernels/norm.cu
  ${RLX_GPU_DIR}/kernels/rope.cu
  ${RLX_GPU_DIR}/kernels/attention.cu
  ${RLX_GPU_DIR}/kernels/embed.cu
  ${RLX_GPU_DIR}/kernels/matmul.cu)
set(RLX_GPU_HOST_SOURCES
  ${RLX_GPU_DIR}/plugin.cpp
  ${RLX_GPU_DIR}/device.cpp
  ${RLX_GPU_DIR}/buffer.cpp
  ${RLX_GPU_DIR}/program.cpp)
