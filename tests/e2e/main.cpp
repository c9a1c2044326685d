#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdlib>

// The jobs these tests play share the VM's 2 cores with their collector and the simulated
// device, so their cores are often all busy, and the default budget (which then spends what
// its work costs the job's wall time) would sample the short runs the checks expect recorded
// whole, by how busy the machine was. The tests' jobs spend the budget's own time instead;
// contended_test.cpp checks the default beside busy threads. A value given outside is kept.
int main(int argc, char** argv) {
  setenv("GPUWATCH_OVERHEAD_CONTENDED", "0", 0);
  return Catch::Session().run(argc, argv);
}
