# A process that exits while its threads are inside CUDA calls (exit_test.cpp).
gw_iso_program(exit_race progs/exit_race.cpp CUDA::cudart Threads::Threads)
target_sources(isolation_tests PRIVATE exit_test.cpp)
