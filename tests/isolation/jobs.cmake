# Jobs: the autostarted collector holds none of the job's files, each job (every process of
# one job tree) has its own collector, and jobs sharing an output folder keep their
# summaries (jobs_test.cpp).
gw_iso_program(jobs_cuda progs/jobs_cuda.c CUDA::cudart)
target_sources(isolation_tests PRIVATE jobs_test.cpp)
# The tests name the files the library and the collector name (proto/endpoint.h), and run
# `gpuwatch run`.
target_link_libraries(isolation_tests PRIVATE gpuwatch_wire)
add_dependencies(isolation_tests gpuwatch_cli)
