// Private to src/config: the machinery of the table-driven loader, shared by
// config.cc (the engine: value kinds, conversion, tables applied to TOML,
// the public entry points) and config_keys.cc (the key tables themselves,
// each key's own checks, the checks across keys, DocumentedKeys()).
//
// A key is one KeySpec row: its section, kind, documented type, default and
// meaning, plus the function that stores the checked value. ApplyTable()
// walks a TOML table through its rows: unknown keys (with a "did you mean"),
// kind and range checks, missing required keys; then each row's `apply`.
#ifndef CRONLEDGER_CONFIG_CONFIG_INTERNAL_H_
#define CRONLEDGER_CONFIG_CONFIG_INTERNAL_H_

#include <toml++/toml.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/config.h"

namespace cronledger::config::internal {

// Collects problems; the folder relative paths resolve against.
class Reporter {
 public:
  Reporter(std::string file, std::string dir) : file_(std::move(file)), dir_(std::move(dir)) {}
  void Add(int line, std::string key, std::string message) {
    problems_.push_back({file_, line, std::move(key), std::move(message)});
  }
  const std::string& dir() const { return dir_; }
  bool empty() const { return problems_.empty(); }
  // Problems so far: a check across keys compares it before and after the
  // keys it needs, so that a key already reported is not reported again.
  std::size_t count() const { return problems_.size(); }
  // In file order; problems on one line keep the order they were found in.
  std::vector<ConfigProblem> Take();

 private:
  std::string file_;
  std::string dir_;
  std::vector<ConfigProblem> problems_;
};

inline int LineOf(const toml::node& node) { return static_cast<int>(node.source().begin.line); }

// Where a value sits: its node and its key path ("job[daily_report].schedule").
struct Site {
  Reporter& reporter;
  const toml::node& node;
  std::string path;

  void Error(std::string message) const { reporter.Add(LineOf(node), path, std::move(message)); }
  // Reports; for `return site.Fail(...)` in a function returning an optional.
  std::nullopt_t Fail(std::string message) const {
    Error(std::move(message));
    return std::nullopt;
  }
  void ErrorAt(const toml::node& at, std::string message) const {
    reporter.Add(LineOf(at), path, std::move(message));
  }
};

std::string Quote(std::string_view s);
std::string JoinPath(std::string_view path, std::string_view key);
// "\"a\", \"b\" or \"c\"".
// "a string", "an integer", "an array of tables", ...
std::string_view TypeName(const toml::node& node);
std::string ChoiceList(std::span<const std::string_view> choices);
// "3d", "1h30m", "500ms", "0s": the shortest compound ParseDuration reads back.
std::string FormatDuration(std::chrono::milliseconds d);
// "1MiB", "1536KiB", "1000": the largest unit that divides the size.
std::string FormatSize(uint64_t bytes);

// ---- value kinds ------------------------------------------------------------------

enum class Kind {
  kString,
  kInt,
  kNumber,  // floating point; an integer is accepted too
  kBool,
  kDuration,    // whole seconds
  kDurationMs,  // milliseconds allowed
  kSize,
  kChoice,
  kStringArray,
  kIntArray,
  kTable,
  kTableArray,
};

// A value that passed its kind's checks; only the member of its kind is set.
struct Value {
  std::string text;                         // kString, kChoice, kDuration*, kSize (as written)
  int64_t integer = 0;                      // kInt
  double number = 0;                        // kNumber
  bool boolean = false;                     // kBool
  std::size_t choice = 0;                   // kChoice: index into KeySpec::choices
  std::chrono::milliseconds duration{0};    // kDuration, kDurationMs
  uint64_t size = 0;                        // kSize, in bytes
  std::vector<std::string> strings;         // kStringArray
  std::vector<int64_t> integers;            // kIntArray
  std::vector<const toml::node*> elements;  // arrays: each element, for its line
};

// One accepted key of one section. `apply` stores a checked value into the
// section's struct, reporting any further problem through the Site.
template <typename T>
struct KeySpec {
  std::string_view key;
  Kind kind;
  std::string_view type;     // for docs; empty: derived from kind, min, max, choices
  std::string_view deflt;    // for docs; "required" makes the key required
  std::string_view meaning;  // for docs
  void (*apply)(const Value&, const Site&, T&);
  // kInt, kIntArray (each element), kSize (bytes): inclusive range.
  // kNumber: inclusive range; max < min means no upper bound.
  // kDuration, kDurationMs: min 1 means "> 0", 0 means ">= 0".
  int64_t min = 0;
  int64_t max = 0;
  std::span<const std::string_view> choices = {};

  bool required() const { return deflt == "required"; }
};

// Applies every key of `table` through `specs`, reports unknown and missing
// keys. `later` names keys that a later release implements (an unknown key that
// says so; docs/architecture.md, Not built yet); `section` is the documented
// section ("job.step"), `path` the table's key path ("" at the top level).
// Instantiated in config.cc for each section struct.
template <typename T>
void ApplyTable(const toml::table& table, std::span<const KeySpec<T>> specs,
                std::span<const std::string_view> later, std::string_view section,
                const std::string& path, Reporter& reporter, T& target);

// The top-level keys ([server], [auth], [[job]]); defined in config_keys.cc
// with every table below them.
std::span<const KeySpec<Config>> RootKeys();

// Checks that need keys of several sections (a non-loopback listen address
// needs tokens); run once every table is applied.
void CheckAcrossSections(const toml::table& root, Reporter& reporter, const Config& config);

}  // namespace cronledger::config::internal

#endif  // CRONLEDGER_CONFIG_CONFIG_INTERNAL_H_
