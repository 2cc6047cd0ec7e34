// Loading and validating cronledger.toml: the engine.
//
// Table-driven: every accepted key is one KeySpec row in config_keys.cc — its
// section, type, default and meaning, plus the function that stores the checked
// value. This file turns TOML values into checked Values by their kind
// (config_internal.h), walks a table through its rows (unknown keys, types,
// ranges, required keys) and holds the public entry points. The same rows word
// the messages and feed DocumentedKeys(), which a test compares with
// docs/config.md. A key a later release implements is added as one row there.
#include "config/config.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <span>

#include "common/text.h"
#include "config/config_internal.h"

namespace cronledger::config {
namespace internal {

using std::chrono::milliseconds;

// ---- problems and words ---------------------------------------------------------

std::vector<ConfigProblem> Reporter::Take() {
  std::stable_sort(problems_.begin(), problems_.end(),
                   [](const ConfigProblem& a, const ConfigProblem& b) { return a.line < b.line; });
  return std::move(problems_);
}

std::string JoinPath(std::string_view path, std::string_view key) {
  return path.empty() ? std::string(key) : fmt::format("{}.{}", path, key);
}

std::string ChoiceList(std::span<const std::string_view> choices) {
  std::string out;
  for (std::size_t i = 0; i < choices.size(); ++i) {
    if (i > 0) out += i + 1 == choices.size() ? " or " : ", ";
    out += Quote(choices[i]);
  }
  return out;
}

std::string FormatSize(uint64_t bytes) {
  for (const auto& [unit, shift] :
       {std::pair<std::string_view, int>{"GiB", 30}, {"MiB", 20}, {"KiB", 10}}) {
    const uint64_t size = uint64_t{1} << shift;
    if (bytes >= size && bytes % size == 0) return fmt::format("{}{}", bytes / size, unit);
  }
  return fmt::format("{}", bytes);
}

std::string_view TypeName(const toml::node& node) {
  if (node.is_array_of_tables()) return "an array of tables";
  // Indexed by toml::node_type.
  constexpr std::string_view kNames[] = {
      "nothing",   "a table", "an array", "a string",   "an integer", "a floating-point number",
      "a boolean", "a date",  "a time",   "a date-time"};
  return kNames[static_cast<std::size_t>(node.type())];
}

namespace {

bool IsDuration(Kind kind) { return kind == Kind::kDuration || kind == Kind::kDurationMs; }

// What a string-valued kind expects, for "expected X, got Y".
std::string ExpectedString(Kind kind, std::span<const std::string_view> choices) {
  switch (kind) {
    case Kind::kChoice:
      return fmt::format("a string ({})", ChoiceList(choices));
    case Kind::kDuration:
    case Kind::kDurationMs:
      return "a duration string such as \"30s\"";
    case Kind::kSize:
      return "a size string such as \"1MiB\"";
    default:
      return "a string";
  }
}

// kString, kChoice, kDuration, kDurationMs, kSize: a TOML string, then the
// kind's own parsing and range.
template <typename T>
std::optional<Value> ConvertString(const KeySpec<T>& spec, const Site& site) {
  const toml::node& node = site.node;
  if (node.is_integer()) {
    const int64_t n = node.as_integer()->get();
    if (IsDuration(spec.kind)) {
      return site.Fail(
          fmt::format("expected a duration string, got the integer {}; use e.g. \"{}s\"", n, n));
    }
    if (spec.kind == Kind::kSize) {
      return site.Fail(fmt::format(
          "expected a size string, got the integer {}; write e.g. \"{}\" (bytes) or \"1MiB\"", n,
          n));
    }
  }
  if (node.is_date() && spec.type.starts_with("string: YYYY-MM-DD")) {
    // TOML's own date literal (start_date = 2026-11-20) means the same date.
    const toml::date d = node.as_date()->get();
    Value v;
    v.text = fmt::format("{:04}-{:02}-{:02}", d.year, d.month, d.day);
    return v;
  }
  if (!node.is_string()) {
    return site.Fail(fmt::format("expected {}, got {}", ExpectedString(spec.kind, spec.choices),
                                 TypeName(node)));
  }
  Value v;
  v.text = node.as_string()->get();
  if (spec.kind == Kind::kChoice) {
    const auto it = std::find(spec.choices.begin(), spec.choices.end(), v.text);
    if (it == spec.choices.end()) {
      return site.Fail(
          fmt::format("{} is not allowed; use {}", Quote(v.text), ChoiceList(spec.choices)));
    }
    v.choice = static_cast<std::size_t>(it - spec.choices.begin());
  } else if (IsDuration(spec.kind)) {
    if (spec.min > 0 && v.text.starts_with('-')) {
      return site.Fail(fmt::format("must be greater than 0, got {}", Quote(v.text)));
    }
    auto d = ParseDuration(v.text);
    if (!d.ok()) return site.Fail(d.status().message());
    if (spec.kind == Kind::kDuration && d->count() % 1000 != 0) {
      return site.Fail(fmt::format("{} is not a whole number of seconds", Quote(v.text)));
    }
    if (spec.min > 0 && d->count() == 0) {
      return site.Fail(fmt::format("must be greater than 0, got {}", Quote(v.text)));
    }
    v.duration = *d;
  } else if (spec.kind == Kind::kSize) {
    auto size = ParseSize(v.text);
    if (!size.ok()) return site.Fail(size.status().message());
    if (*size < static_cast<uint64_t>(spec.min) || *size > static_cast<uint64_t>(spec.max)) {
      return site.Fail(fmt::format("must be between {} and {}, got {}",
                                   FormatSize(static_cast<uint64_t>(spec.min)),
                                   FormatSize(static_cast<uint64_t>(spec.max)), Quote(v.text)));
    }
    v.size = *size;
  }
  return v;
}

// kStringArray, kIntArray: every element of the right type (and range);
// each wrong element is reported at its own line.
template <typename T>
std::optional<Value> ConvertArray(const KeySpec<T>& spec, const Site& site) {
  const bool strings = spec.kind == Kind::kStringArray;
  if (!site.node.is_array()) {
    return site.Fail(fmt::format("expected an array of {}, got {}",
                                 strings ? "strings" : "integers", TypeName(site.node)));
  }
  Value v;
  bool ok = true;
  std::size_t index = 0;
  for (const toml::node& element : *site.node.as_array()) {
    ++index;
    if (strings && element.is_string()) {
      v.strings.push_back(element.as_string()->get());
    } else if (!strings && element.is_integer()) {
      const int64_t n = element.as_integer()->get();
      if (n < spec.min || n > spec.max) {
        site.ErrorAt(element, fmt::format("element {}: must be between {} and {}, got {}", index,
                                          spec.min, spec.max, n));
        ok = false;
      }
      v.integers.push_back(n);
    } else {
      site.ErrorAt(element, fmt::format("element {}: expected {}, got {}", index,
                                        strings ? "a string" : "an integer", TypeName(element)));
      ok = false;
    }
    v.elements.push_back(&element);
  }
  if (!ok) return std::nullopt;
  return v;
}

// Checks `site.node` against the spec's kind and range; nullopt (reported)
// when it does not fit.
template <typename T>
std::optional<Value> Convert(const KeySpec<T>& spec, const Site& site, std::string_view section) {
  const toml::node& node = site.node;
  const std::string_view got = TypeName(node);
  Value v;
  switch (spec.kind) {
    case Kind::kString:
    case Kind::kChoice:
    case Kind::kDuration:
    case Kind::kDurationMs:
    case Kind::kSize:
      return ConvertString(spec, site);
    case Kind::kInt:
      if (!node.is_integer()) return site.Fail(fmt::format("expected an integer, got {}", got));
      v.integer = node.as_integer()->get();
      if (v.integer < spec.min || v.integer > spec.max) {
        return site.Fail(
            fmt::format("must be between {} and {}, got {}", spec.min, spec.max, v.integer));
      }
      return v;
    case Kind::kNumber: {
      if (node.is_integer()) {
        v.number = static_cast<double>(node.as_integer()->get());
      } else if (node.is_floating_point()) {
        v.number = node.as_floating_point()->get();
      } else {
        return site.Fail(fmt::format("expected a number, got {}", got));
      }
      if (!std::isfinite(v.number)) {
        return site.Fail(fmt::format("must be a finite number, got {}", v.number));
      }
      const auto min = static_cast<double>(spec.min);
      const auto max = static_cast<double>(spec.max);
      if (spec.max >= spec.min && (v.number < min || v.number > max)) {
        return site.Fail(
            fmt::format("must be between {} and {}, got {}", spec.min, spec.max, v.number));
      }
      if (v.number < min) {
        return site.Fail(fmt::format("must be at least {}, got {}", spec.min, v.number));
      }
      return v;
    }
    case Kind::kBool:
      if (!node.is_boolean()) {
        return site.Fail(fmt::format("expected a boolean (true or false), got {}", got));
      }
      v.boolean = node.as_boolean()->get();
      return v;
    case Kind::kStringArray:
    case Kind::kIntArray:
      return ConvertArray(spec, site);
    case Kind::kTable:
      if (!node.is_table()) return site.Fail(fmt::format("expected a table, got {}", got));
      return v;
    case Kind::kTableArray:
      if (!node.is_array_of_tables()) {
        return site.Fail(fmt::format("expected an array of tables (write [[{}]] sections), got {}",
                                     JoinPath(section, spec.key), got));
      }
      return v;
  }
  return std::nullopt;
}

}  // namespace

template <typename T>
void ApplyTable(const toml::table& table, std::span<const KeySpec<T>> specs,
                std::span<const std::string_view> later, std::string_view section,
                const std::string& path, Reporter& reporter, T& target) {
  for (const auto& [key, node] : table) {
    const std::string_view name = key.str();
    const Site site{reporter, node, JoinPath(path, name)};
    const auto spec = std::find_if(specs.begin(), specs.end(),
                                   [&](const KeySpec<T>& s) { return s.key == name; });
    if (spec == specs.end()) {
      if (std::find(later.begin(), later.end(), name) != later.end()) {
        site.Error(fmt::format("unknown key: {} is not supported by this release", Quote(name)));
        continue;
      }
      std::string_view best;
      std::size_t best_distance = name.size() < 5 ? 1 : 2;
      for (const auto& s : specs) {
        const std::size_t d = EditDistance(name, s.key);
        if (d <= best_distance && (best.empty() || d < best_distance)) {
          best = s.key;
          best_distance = d;
        }
      }
      site.Error(best.empty() ? std::string("unknown key")
                              : fmt::format("unknown key; did you mean {}?", Quote(best)));
      continue;
    }
    if (auto value = Convert(*spec, site, section)) spec->apply(*value, site, target);
  }
  for (const auto& spec : specs) {
    if (spec.required() && !table.contains(spec.key)) {
      std::string message = "required key is missing";
      if (spec.kind == Kind::kTable) {
        message = fmt::format("required table [{}] is missing", JoinPath(section, spec.key));
      } else if (spec.kind == Kind::kTableArray) {
        message =
            fmt::format("at least one [[{}]] section is required", JoinPath(section, spec.key));
      }
      reporter.Add(LineOf(table), JoinPath(path, spec.key), std::move(message));
    }
  }
}

#define CRONLEDGER_APPLY_TABLE(T)                                                  \
  template void ApplyTable<T>(const toml::table&, std::span<const KeySpec<T>>,     \
                              std::span<const std::string_view>, std::string_view, \
                              const std::string&, Reporter&, T&)
CRONLEDGER_APPLY_TABLE(Config);
CRONLEDGER_APPLY_TABLE(ServerConfig);
CRONLEDGER_APPLY_TABLE(JobConfig);
CRONLEDGER_APPLY_TABLE(StepConfig);
CRONLEDGER_APPLY_TABLE(BackfillConfig);
CRONLEDGER_APPLY_TABLE(AlertConfig);
CRONLEDGER_APPLY_TABLE(ledger::RetryPolicy);
CRONLEDGER_APPLY_TABLE(AuthConfig);
CRONLEDGER_APPLY_TABLE(TokenConfig);
#undef CRONLEDGER_APPLY_TABLE

namespace {

// Reads a whole file; errno-based message on failure.
std::optional<std::string> ReadFile(const std::string& path, std::string& error) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    error = std::strerror(errno);
    return std::nullopt;
  }
  std::string text;
  char buf[65536];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
  const bool failed = std::ferror(f) != 0;
  const int saved = errno;
  std::fclose(f);
  if (failed) {
    error = std::strerror(saved);
    return std::nullopt;
  }
  return text;
}

}  // namespace
}  // namespace internal

// ---- public functions ---------------------------------------------------------------

std::string ConfigProblem::ToString() const {
  std::string out = file;
  if (line > 0) out += fmt::format(":{}", line);
  out += ": ";
  if (!key.empty()) out += key + ": ";
  out += message;
  return out;
}

std::string ConfigErrors::ToString() const {
  std::string out;
  for (const auto& p : problems) out += p.ToString() + "\n";
  return out;
}

std::variant<Config, ConfigErrors> ParseConfig(std::string_view text, const std::string& path) {
  Config config;
  config.path = path;
  config.dir = ConfigDir(path);
  internal::Reporter reporter(path, config.dir);
  toml::table root;
  try {
    root = toml::parse(text, std::string_view{path});
  } catch (const toml::parse_error& e) {
    reporter.Add(static_cast<int>(e.source().begin.line), "",
                 fmt::format("TOML syntax error: {}", e.description()));
    return ConfigErrors{reporter.Take()};
  }
  internal::ApplyTable<Config>(root, internal::RootKeys(), {}, "", "", reporter, config);
  internal::CheckAcrossSections(root, reporter, config);
  if (!reporter.empty()) return ConfigErrors{reporter.Take()};
  return config;
}

std::variant<Config, ConfigErrors> LoadConfig(const std::string& path) {
  std::string error;
  const auto text = internal::ReadFile(path, error);
  if (!text) {
    return ConfigErrors{{{path, 0, "", fmt::format("cannot read the configuration: {}", error)}}};
  }
  return ParseConfig(*text, path);
}

std::string ConfigDir(const std::string& path) {
  std::error_code ec;
  std::filesystem::path abs = std::filesystem::absolute(path, ec);
  if (ec) abs = path;
  return abs.lexically_normal().parent_path().string();
}

}  // namespace cronledger::config
