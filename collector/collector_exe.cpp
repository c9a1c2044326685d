// gpuwatch-collector: see main.cpp.
#include "collector_main.h"

int main(int argc, char** argv) { return CollectorMain(argc, argv); }
