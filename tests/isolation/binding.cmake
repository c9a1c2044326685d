# How the hooks bind: programs that probe for the CUDA runtime (binding_test.cpp).
gw_iso_program(weak_probe progs/weak_probe.c ${CMAKE_DL_LIBS})
target_sources(isolation_tests PRIVATE binding_test.cpp)
