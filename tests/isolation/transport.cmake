# The library's descriptors and its exit paths (transport_test.cpp): a job that closes and
# reuses descriptor numbers, a process that ends at once, Ctrl-C in Python, a collector
# that does not read.
gw_iso_program(transport_fd_reuse progs/transport_fd_reuse.c CUDA::cudart)
gw_iso_program(transport_copies progs/transport_copies.c CUDA::cudart)
target_sources(isolation_tests PRIVATE transport_test.cpp)
target_compile_definitions(isolation_tests PRIVATE
  GW_ISO_PROGS_DIR="${CMAKE_CURRENT_SOURCE_DIR}/progs")
add_dependencies(isolation_tests gpuwatch_cli)
