#include <catch2/catch.hpp>

#include "record/ptr_table.h"

using gpuwatch::inject::PtrTable;

TEST_CASE("pointer table finds what was put and reports full") {
  auto t = std::make_unique<PtrTable<8>>();
  int x[10];
  for (int i = 0; i < 8; ++i) CHECK(t->Put(&x[i], i + 1));
  CHECK_FALSE(t->Put(&x[8], 9));
  for (int i = 0; i < 8; ++i) CHECK(t->Find(&x[i]) == uint64_t(i + 1));
  CHECK(t->Find(&x[9]) == 0);
  CHECK(t->Put(&x[3], 77));
  CHECK(t->Find(&x[3]) == 77);
  CHECK(t->Find(nullptr) == 0);
}
