// Every summary.json and `gpuwatch diff --json` document the end-to-end tests read is also
// checked against docs/summary.schema.json. Starting a validator per document would cost a
// Python start each (about 0.2 s, a few hundred times), so the tests only keep a copy under
// WORK/schema-check/; the ctest fixture cleanup "schema: every summary and diff JSON the e2e
// tests read validates" checks them all in one process after the tests ran (fixture
// e2e_schema_check, tests/e2e/CMakeLists.txt; running e2e_tests by hand checks nothing).
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace gpuwatch::e2e {

// The folder the copies go to; emptied by the fixture's setup test.
std::string SchemaCheckDir();

// Parses `text` (a summary.json or a diff's JSON) and keeps a copy for the schema check,
// named after `origin` (a path, so that a failure names the test's work folder).
nlohmann::json ParseKept(const std::string& text, const std::string& origin);

// ParseKept of the file at `path`.
nlohmann::json ReadSummary(const std::string& path);

}  // namespace gpuwatch::e2e
