// gpuwatch-collector's whole program as a function, so `gpuwatch collector ...` is the same
// program with the same options (main.cpp), not a copy of it.
#pragma once

// argv[0] is the name shown in --help. Returns the process exit code.
int CollectorMain(int argc, char** argv);
