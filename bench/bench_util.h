// Failing loudly in benchmarks: a benchmark that measured a broken run must
// not print a figure.
#ifndef CRONLEDGER_BENCH_BENCH_UTIL_H_
#define CRONLEDGER_BENCH_BENCH_UTIL_H_

#include <cstdio>
#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "cronledger/status.h"

namespace cronledger::bench {

#ifdef NDEBUG
inline constexpr bool kNdebug = true;
inline constexpr const char* kBuildType = "NDEBUG (optimised, asserts off)";
#else
inline constexpr bool kNdebug = false;
inline constexpr const char* kBuildType = "NOT NDEBUG (debug build: figures are not meaningful)";
#endif

// Set by each benchmark's main file: its name, for messages.
extern const char* const kBenchName;

[[noreturn]] inline void Die(const std::string& what) {
  std::fprintf(stderr, "%s: %s\n", kBenchName, what.c_str());
  std::exit(1);
}

template <typename T>
T Check(Result<T> r, const char* what) {
  if (!r.ok()) Die(fmt::format("{}: {}", what, r.status().ToString()));
  return std::move(*r);
}

inline void Check(const Status& s, const char* what) {
  if (!s.ok()) Die(fmt::format("{}: {}", what, s.ToString()));
}

}  // namespace cronledger::bench

#endif  // CRONLEDGER_BENCH_BENCH_UTIL_H_
