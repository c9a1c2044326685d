# How the hooks bind: programs that probe for the CUDA runtime (binding_test.cpp).
gw_iso_program(weak_probe progs/weak_probe.c ${CMAKE_DL_LIBS})
target_sources(isolation_tests PRIVATE binding_test.cpp)
add_library(iso_own_symbols_lib SHARED progs/own_symbols_lib.c)
set_target_properties(iso_own_symbols_lib PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${CMAKE_RUNTIME_OUTPUT_DIRECTORY})
gw_iso_program(own_symbols progs/own_symbols.c iso_own_symbols_lib)
gw_iso_program(call_every_export progs/call_every_export.c ${CMAKE_DL_LIBS})
gw_iso_program(nvtx_only progs/nvtx_only.c CUDA::nvtx3 ${CMAKE_DL_LIBS})
target_compile_definitions(isolation_tests PRIVATE GPUWATCH_EXPORTS_MAP="${PROJECT_SOURCE_DIR}/libinject/exports.map")
