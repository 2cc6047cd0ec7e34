// Loading and validating cronledger.toml.
//
// Table-driven (STYLE.md, lesson 14): every accepted key is one KeySpec row
// below — its section, type, default and meaning, plus the function that
// stores the checked value. The same rows detect unknown keys, word the type
// and range messages, and feed DocumentedKeys(), which a test compares with
// docs/config.md. A key a later release implements is added as one row.
#include "config/config.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <set>
#include <span>

#include "common/text.h"

namespace cronledger::config {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// ---- problems ---------------------------------------------------------------

class Reporter {
 public:
  Reporter(std::string file, std::string dir) : file_(std::move(file)), dir_(std::move(dir)) {}
  void Add(int line, std::string key, std::string message) {
    problems_.push_back({file_, line, std::move(key), std::move(message)});
  }
  const std::string& dir() const { return dir_; }
  bool empty() const { return problems_.empty(); }
  // In file order; problems on one line keep the order they were found in.
  std::vector<ConfigProblem> Take() {
    std::stable_sort(
        problems_.begin(), problems_.end(),
        [](const ConfigProblem& a, const ConfigProblem& b) { return a.line < b.line; });
    return std::move(problems_);
  }

 private:
  std::string file_;
  std::string dir_;
  std::vector<ConfigProblem> problems_;
};

int LineOf(const toml::node& node) { return static_cast<int>(node.source().begin.line); }

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

std::string Quote(std::string_view s) { return fmt::format("\"{}\"", s); }

std::string JoinPath(std::string_view path, std::string_view key) {
  return path.empty() ? std::string(key) : fmt::format("{}.{}", path, key);
}

// ---- value kinds --------------------------------------------------------------

enum class Kind { kString, kInt, kBool, kDuration, kChoice, kStringArray, kTable, kTableArray };

// A value that passed its kind's checks; only the member of its kind is set.
struct Value {
  std::string text;                         // kString, kChoice, kDuration (as written)
  int64_t integer = 0;                      // kInt
  bool boolean = false;                     // kBool
  std::size_t choice = 0;                   // kChoice: index into KeySpec::choices
  seconds duration{0};                      // kDuration
  std::vector<std::string> strings;         // kStringArray
  std::vector<const toml::node*> elements;  // kStringArray: each element, for its line
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
  int64_t min = 0;  // kInt: inclusive range; kDuration: 1 means "> 0", 0 means ">= 0"
  int64_t max = 0;
  std::span<const std::string_view> choices = {};

  bool required() const { return deflt == "required"; }
};

std::string_view TypeName(const toml::node& node) {
  if (node.is_array_of_tables()) return "an array of tables";
  // Indexed by toml::node_type.
  constexpr std::string_view kNames[] = {
      "nothing",   "a table", "an array", "a string",   "an integer", "a floating-point number",
      "a boolean", "a date",  "a time",   "a date-time"};
  return kNames[static_cast<std::size_t>(node.type())];
}

std::string ChoiceList(std::span<const std::string_view> choices) {
  std::string out;
  for (std::size_t i = 0; i < choices.size(); ++i) {
    if (i > 0) out += i + 1 == choices.size() ? " or " : ", ";
    out += Quote(choices[i]);
  }
  return out;
}

template <typename T>
std::string TypeDoc(const KeySpec<T>& spec) {
  if (!spec.type.empty()) return std::string(spec.type);
  switch (spec.kind) {
    case Kind::kString:
      return "string";
    case Kind::kInt:
      return fmt::format("integer {}..{}", spec.min, spec.max);
    case Kind::kBool:
      return "boolean";
    case Kind::kDuration:
      return spec.min > 0 ? "duration > 0" : "duration >= 0";
    case Kind::kChoice:
      return ChoiceList(spec.choices);
    case Kind::kStringArray:
      return "array of strings";
    case Kind::kTable:
      return "table";
    case Kind::kTableArray:
      return "array of tables";
  }
  return "";
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
    case Kind::kDuration: {
      if (spec.kind == Kind::kDuration && node.is_integer()) {
        const int64_t n = node.as_integer()->get();
        return site.Fail(
            fmt::format("expected a duration string, got the integer {}; use e.g. \"{}s\"", n, n));
      }
      if (!node.is_string()) {
        return site.Fail(fmt::format(
            "expected {}, got {}",
            spec.kind == Kind::kChoice     ? fmt::format("a string ({})", ChoiceList(spec.choices))
            : spec.kind == Kind::kDuration ? std::string("a duration string such as \"30s\"")
                                           : std::string("a string"),
            got));
      }
      v.text = node.as_string()->get();
      if (spec.kind == Kind::kChoice) {
        const auto it = std::find(spec.choices.begin(), spec.choices.end(), v.text);
        if (it == spec.choices.end()) {
          return site.Fail(
              fmt::format("{} is not allowed; use {}", Quote(v.text), ChoiceList(spec.choices)));
        }
        v.choice = static_cast<std::size_t>(it - spec.choices.begin());
      } else if (spec.kind == Kind::kDuration) {
        auto d = ParseDuration(v.text);
        if (!d.ok()) return site.Fail(d.status().message());
        if (d->count() % 1000 != 0) {
          return site.Fail(fmt::format("{} is not a whole number of seconds", Quote(v.text)));
        }
        if (spec.min > 0 && d->count() == 0) {
          return site.Fail(fmt::format("must be greater than 0, got {}", Quote(v.text)));
        }
        v.duration = std::chrono::duration_cast<seconds>(*d);
      }
      return v;
    }
    case Kind::kInt:
      if (!node.is_integer()) return site.Fail(fmt::format("expected an integer, got {}", got));
      v.integer = node.as_integer()->get();
      if (v.integer < spec.min || v.integer > spec.max) {
        return site.Fail(
            fmt::format("must be between {} and {}, got {}", spec.min, spec.max, v.integer));
      }
      return v;
    case Kind::kBool:
      if (!node.is_boolean()) {
        return site.Fail(fmt::format("expected a boolean (true or false), got {}", got));
      }
      v.boolean = node.as_boolean()->get();
      return v;
    case Kind::kStringArray: {
      if (!node.is_array())
        return site.Fail(fmt::format("expected an array of strings, got {}", got));
      bool ok = true;
      std::size_t index = 0;
      for (const toml::node& element : *node.as_array()) {
        ++index;
        if (element.is_string()) {
          v.strings.push_back(element.as_string()->get());
          v.elements.push_back(&element);
        } else {
          site.ErrorAt(element, fmt::format("element {}: expected a string, got {}", index,
                                            TypeName(element)));
          ok = false;
        }
      }
      if (!ok) return std::nullopt;
      return v;
    }
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

// Keys of DESIGN.md that later releases implement: named as such when used.
constexpr std::string_view kLaterServerKeys[] = {"drain_timeout", "log_dir",   "log_retention",
                                                 "output_cap",    "retention", "metrics_public"};
constexpr std::string_view kLaterJobKeys[] = {"executor", "lease_ttl",        "overlap",
                                              "retry",    "retry_exit_codes", "fail_exit_codes",
                                              "env",      "env_from_host"};
constexpr std::string_view kLaterStepKeys[] = {"keep_inputs"};

// Applies every key of `table` through `specs`, reports unknown and missing
// keys. `path` is the table's key path ("" at the top level).
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

// ---- checks shared by several keys ----------------------------------------------

// A relative program path with a '/' ("./bin/report", "bin/report") resolves
// against the config folder; a bare name ("python3") is looked up in PATH.
std::string ResolveProgram(const std::string& program, const std::string& dir) {
  if (program.find('/') == std::string::npos || program.front() == '/') return program;
  return (std::filesystem::path(dir) / program).lexically_normal().string();
}

// Checks an argv (non-empty, no empty element) and resolves argv[0].
bool CheckArgv(const Value& v, const Site& site, std::vector<std::string>& argv) {
  if (v.strings.empty()) {
    site.Error("must not be empty: give the program and its arguments, e.g. [\"./bin/report\"]");
    return false;
  }
  bool ok = true;
  for (std::size_t i = 0; i < v.strings.size(); ++i) {
    if (v.strings[i].empty()) {
      site.ErrorAt(*v.elements[i], fmt::format("element {} is an empty string", i + 1));
      ok = false;
    }
  }
  if (!ok) return false;
  argv = v.strings;
  argv[0] = ResolveProgram(argv[0], site.reporter.dir());
  return true;
}

constexpr std::string_view kPlaceholders[] = {"{partition}", "{business_date}", "{period}",
                                              "{run_key}"};

// Every "{...}" in a step's argv must be one of kPlaceholders.
bool CheckPlaceholders(const Value& v, const Site& site) {
  bool ok = true;
  for (std::size_t i = 0; i < v.strings.size(); ++i) {
    const std::string& arg = v.strings[i];
    for (std::size_t open = arg.find('{'); open != std::string::npos;
         open = arg.find('{', open + 1)) {
      const std::size_t close = arg.find('}', open);
      if (close == std::string::npos) break;
      const std::string_view token = std::string_view(arg).substr(open, close - open + 1);
      if (std::find(std::begin(kPlaceholders), std::end(kPlaceholders), token) ==
          std::end(kPlaceholders)) {
        site.ErrorAt(*v.elements[i],
                     fmt::format("unknown placeholder {} in element {}; the placeholders are "
                                 "{{partition}}, {{business_date}}, {{period}} and {{run_key}}",
                                 Quote(token), i + 1));
        ok = false;
      }
      open = close;
    }
  }
  return ok;
}

// "sqlite:PATH" (PATH made absolute) or the later-release PostgreSQL error.
void ApplyStore(const Value& v, const Site& site, ServerConfig& s) {
  const std::string& text = v.text;
  if (text.starts_with("postgresql://") || text.starts_with("postgres://")) {
    return site.Error("PostgreSQL stores arrive in a later release; use sqlite:FILE");
  }
  if (!text.starts_with("sqlite:")) {
    return site.Error(fmt::format(
        "{} is not a store; use sqlite:FILE, e.g. \"sqlite:cronledger.db\"", Quote(text)));
  }
  const std::string file = text.substr(7);
  if (file.empty()) {
    return site.Error("\"sqlite:\" names no file; use sqlite:FILE, e.g. \"sqlite:cronledger.db\"");
  }
  s.store =
      "sqlite:" + (std::filesystem::path(site.reporter.dir()) / file).lexically_normal().string();
}

// host:port with a loopback host; IPv6 in brackets.
void ApplyListen(const Value& v, const Site& site, ServerConfig& s) {
  const std::string& text = v.text;
  std::string host;
  std::string port;
  if (text.starts_with("[")) {
    const std::size_t close = text.find("]:");
    if (close == std::string::npos) {
      return site.Error(fmt::format("{} is not host:port; e.g. \"[::1]:8377\"", Quote(text)));
    }
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    const std::size_t colon = text.rfind(':');
    if (colon == std::string::npos) {
      return site.Error(
          fmt::format("{} has no port; use host:port, e.g. \"127.0.0.1:8377\"", Quote(text)));
    }
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
    if (host.find(':') != std::string::npos) {
      return site.Error(
          fmt::format("{}: write an IPv6 address in brackets, e.g. \"[::1]:8377\"", Quote(text)));
    }
  }
  const bool port_ok =
      !port.empty() && port.size() <= 5 &&
      std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
      std::stoi(port) >= 1 && std::stoi(port) <= 65535;
  if (!port_ok) {
    return site.Error(fmt::format("port {} must be a number from 1 to 65535", Quote(port)));
  }
  in_addr v4{};
  in6_addr v6{};
  const bool loopback =
      host == "localhost" ||
      (inet_pton(AF_INET, host.c_str(), &v4) == 1 && (ntohl(v4.s_addr) >> 24) == 127) ||
      (inet_pton(AF_INET6, host.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6));
  if (!loopback) {
    return site.Error(
        fmt::format("host {} is not a loopback address; this release has no "
                    "authentication yet, so it listens only on 127.x.x.x, ::1 or localhost",
                    Quote(host)));
  }
  s.listen = text;
}

// ---- the key tables --------------------------------------------------------------

// Setters for keys that need no check beyond their kind's: one line each in
// the tables. `M` is a pointer to the member the key sets.
template <auto M>
struct MemberOf;
template <typename T, typename V, V T::*M>
struct MemberOf<M> {
  using Class = T;
};
template <auto M>
using ClassOf = typename MemberOf<M>::Class;

template <auto M>
void SetInt(const Value& v, const Site&, ClassOf<M>& t) {
  t.*M = static_cast<int>(v.integer);
}
template <auto M>
void SetBool(const Value& v, const Site&, ClassOf<M>& t) {
  t.*M = v.boolean;
}
template <auto M>
void SetString(const Value& v, const Site&, ClassOf<M>& t) {
  t.*M = v.text;
}
template <auto M>
void SetDuration(const Value& v, const Site&, ClassOf<M>& t) {
  t.*M = v.duration;
}
// `kValues` lists the enum values in the order of the key's choices.
template <auto M, const auto& kValues>
void SetChoice(const Value& v, const Site&, ClassOf<M>& t) {
  t.*M = kValues[v.choice];
}
template <auto M>
void SetName(const Value& v, const Site& site, ClassOf<M>& t) {
  if (!IsValidName(v.text)) {
    return site.Error(fmt::format(
        "{} is not a valid name: use 1-64 characters from A-Z a-z 0-9 . _ -", Quote(v.text)));
  }
  t.*M = v.text;
}

constexpr std::string_view kDurabilityChoices[] = {"full", "normal"};
constexpr Durability kDurabilities[] = {Durability::kFull, Durability::kNormal};
constexpr std::string_view kKeyChoices[] = {"date", "slot"};
constexpr PeriodKey kKeys[] = {PeriodKey::kDate, PeriodKey::kSlot};
constexpr std::string_view kDstGapChoices[] = {"shift", "skip"};
constexpr DstGapPolicy kDstGaps[] = {DstGapPolicy::kShift, DstGapPolicy::kSkip};
constexpr std::string_view kDstRepeatChoices[] = {"first", "last", "both"};
constexpr DstRepeatPolicy kDstRepeats[] = {DstRepeatPolicy::kFirst, DstRepeatPolicy::kLast,
                                           DstRepeatPolicy::kBoth};
constexpr std::string_view kCatchupChoices[] = {"all", "latest", "none"};
constexpr Catchup kCatchups[] = {Catchup::kAll, Catchup::kLatest, Catchup::kNone};
constexpr std::string_view kOnPauseChoices[] = {"hold", "skip"};
constexpr OnPause kOnPauses[] = {OnPause::kHold, OnPause::kSkip};

void ApplyNodeId(const Value& v, const Site& site, ServerConfig& s) {
  const bool ok = !v.text.empty() && v.text.size() <= 128 &&
                  std::none_of(v.text.begin(), v.text.end(), [](char c) {
                    return static_cast<unsigned char>(c) <= ' ' || c == 0x7f;
                  });
  if (!ok) {
    return site.Error(
        fmt::format("{} is not a node id: use 1-128 characters without spaces", Quote(v.text)));
  }
  s.node_id = v.text;
}

void ApplyWebhook(const Value& v, const Site& site, AlertConfig& a) {
  const bool ok = (v.text.starts_with("http://") && v.text.size() > 7) ||
                  (v.text.starts_with("https://") && v.text.size() > 8);
  if (!ok) return site.Error(fmt::format("{} is not an http:// or https:// URL", Quote(v.text)));
  a.webhook = v.text;
}

void ApplyCommand(const Value& v, const Site& site, StepConfig& s) {
  std::vector<std::string> argv;
  const bool argv_ok = CheckArgv(v, site, argv);
  if (CheckPlaceholders(v, site) && argv_ok) s.command = std::move(argv);
}

void ApplyPartitionsCommand(const Value& v, const Site& site, JobConfig& j) {
  std::vector<std::string> argv;
  if (CheckArgv(v, site, argv)) j.partitions_command = std::move(argv);
}

const KeySpec<ServerConfig> kServerKeys[] = {
    {"store", Kind::kString, "string: sqlite:FILE", "required",
     "The ledger's database. FILE is relative to the config's folder. PostgreSQL URLs arrive in a "
     "later release.",
     ApplyStore},
    {"listen", Kind::kString, "string: host:port", "127.0.0.1:8377",
     "Address of the HTTP API. Loopback hosts only (127.x.x.x, [::1], localhost) until "
     "authentication exists.",
     ApplyListen},
    {"node_id", Kind::kString, "string", "host name and listen port",
     "Names this process in attempts and events: 1-128 characters, no spaces.", ApplyNodeId},
    {"max_workers", Kind::kInt, "", "8", "Steps this process runs at once, over all jobs.",
     SetInt<&ServerConfig::max_workers>, 1, 1024},
    {"durability", Kind::kChoice, "", "full",
     "SQLite synchronous mode: full survives power loss; normal may lose the last commits.",
     SetChoice<&ServerConfig::durability, kDurabilities>, 0, 0, kDurabilityChoices},
};

const KeySpec<BackfillConfig> kBackfillKeys[] = {
    {"auto_within", Kind::kDuration, "", "0",
     "Gaps younger than this are requeued automatically; older ones await approval. 0: never.",
     SetDuration<&BackfillConfig::auto_within>, 0},
    {"horizon", Kind::kDuration, "", "30d", "How far back the gap scanner looks.",
     SetDuration<&BackfillConfig::horizon>, 1},
};

const KeySpec<AlertConfig> kAlertKeys[] = {
    {"max_lag", Kind::kDuration, "", "1h",
     "A business date is closed this long after its last occurrence; a run in flight longer is "
     "stuck.",
     SetDuration<&AlertConfig::max_lag>, 1},
    {"webhook", Kind::kString, "string: http(s) URL", "none",
     "Where alerts are POSTed (the alerter arrives in a later release; the URL is checked now).",
     ApplyWebhook},
};

const KeySpec<StepConfig> kStepKeys[] = {
    {"name", Kind::kString, "string: 1-64 of A-Z a-z 0-9 . _ -", "required",
     "Unique within the job.", SetName<&StepConfig::name>},
    {"command", Kind::kStringArray, "", "required",
     "argv, never run through a shell. Placeholders {partition} {business_date} {period} "
     "{run_key} are substituted inside elements; a relative program path with a / resolves "
     "against the config's folder.",
     ApplyCommand},
    {"timeout", Kind::kDuration, "", "1h", "The step is stopped after this long: an uncertain end.",
     SetDuration<&StepConfig::timeout>, 1},
    {"idempotent", Kind::kBool, "", "false",
     "Safe to run again after an uncertain end; otherwise such a run becomes unknown.",
     SetBool<&StepConfig::idempotent>},
};

// The label of the Nth (1-based) table of an array in key paths: its name
// when valid, else its position.
std::string Label(const toml::table& table, std::string_view array_path, std::size_t n) {
  const auto* name = table.get_as<std::string>("name");
  if (name != nullptr && IsValidName(name->get())) {
    return fmt::format("{}[{}]", array_path, name->get());
  }
  return fmt::format("{}[{}]", array_path, n);
}

void ApplySteps(const Value&, const Site& site, JobConfig& job) {
  std::size_t n = 0;
  for (const toml::node& node : *site.node.as_array()) {
    const toml::table& table = *node.as_table();
    StepConfig step;
    step.line = LineOf(table);
    ApplyTable<StepConfig>(table, kStepKeys, kLaterStepKeys, "job.step",
                           Label(table, site.path, ++n), site.reporter, step);
    job.steps.push_back(std::move(step));
  }
}

void ApplyPartitions(const Value& v, const Site& site, JobConfig& job) {
  if (v.strings.empty()) {
    return site.Error(
        "must list at least one partition; omit the key for the single partition \"default\"");
  }
  bool ok = true;
  std::set<std::string_view> seen;
  for (std::size_t i = 0; i < v.strings.size(); ++i) {
    const std::string& id = v.strings[i];
    if (!IsValidPartitionId(id)) {
      site.ErrorAt(*v.elements[i],
                   fmt::format("{} is not a valid partition id: use 1-128 characters from "
                               "A-Z a-z 0-9 . _ - : @",
                               Quote(id)));
      ok = false;
    } else if (!seen.insert(id).second) {
      site.ErrorAt(*v.elements[i], fmt::format("duplicate partition {}", Quote(id)));
      ok = false;
    }
  }
  if (ok) job.partitions = v.strings;
}

const KeySpec<JobConfig> kJobKeys[] = {
    {"name", Kind::kString, "string: 1-64 of A-Z a-z 0-9 . _ -", "required",
     "Unique across jobs; the first part of every run key.", SetName<&JobConfig::name>},
    {"schedule", Kind::kString, "string: cron expression", "required",
     "5 fields, 6 with leading seconds, or an @macro (docs/schedule.md), evaluated in timezone.",
     SetString<&JobConfig::schedule>},
    {"timezone", Kind::kString, "string: IANA zone", "required",
     "The business timezone, e.g. Asia/Seoul. Never the server's.",
     SetString<&JobConfig::timezone>},
    {"date_offset_days", Kind::kInt, "", "0",
     "Business date = local date of the occurrence + this (-1: the run reports on yesterday).",
     SetInt<&JobConfig::date_offset_days>, -366, 366},
    {"key", Kind::kChoice, "", "date if the schedule fires at most once a local day, else slot",
     "The period of the run key: the business date, or the local occurrence time.",
     SetChoice<&JobConfig::key, kKeys>, 0, 0, kKeyChoices},
    {"dst_gap", Kind::kChoice, "", "shift",
     "A wall time that does not exist (spring forward): fire at the end of the gap, or skip it.",
     SetChoice<&JobConfig::dst_gap, kDstGaps>, 0, 0, kDstGapChoices},
    {"dst_repeat", Kind::kChoice, "", "first for a fixed hour, both for a wildcard/range/step hour",
     "A wall time that happens twice (fall back): which instants fire.",
     SetChoice<&JobConfig::dst_repeat, kDstRepeats>, 0, 0, kDstRepeatChoices},
    {"partitions", Kind::kStringArray, "array of partition ids", "one partition, \"default\"",
     "Static partition set: unique ids of 1-128 characters from A-Z a-z 0-9 . _ - : @.",
     ApplyPartitions},
    {"partitions_command", Kind::kStringArray, "", "none",
     "argv of a program printing one partition id per line, run at each planning pass; a "
     "relative program path with a / resolves against the config's folder. Not with partitions.",
     ApplyPartitionsCommand},
    {"max_concurrency", Kind::kInt, "", "limited only by server.max_workers",
     "Runs of this job in progress at once.", SetInt<&JobConfig::max_concurrency>, 1, 10000},
    {"misfire_grace", Kind::kDuration, "", "1h",
     "A run never attempted this long after its scheduled time is skipped as misfired.",
     SetDuration<&JobConfig::misfire_grace>, 1},
    {"catchup", Kind::kChoice, "", "all",
     "Several overdue occurrences of a partition: run each, only the newest, or none.",
     SetChoice<&JobConfig::catchup, kCatchups>, 0, 0, kCatchupChoices},
    {"on_pause", Kind::kChoice, "", "hold",
     "While paused: plan runs and hold them until resume, or record them skipped.",
     SetChoice<&JobConfig::on_pause, kOnPauses>, 0, 0, kOnPauseChoices},
    {"backfill", Kind::kTable, "table: auto_within, horizon", "see job.backfill",
     "Gap recovery, e.g. { auto_within = \"3d\", horizon = \"30d\" }.",
     +[](const Value&, const Site& site, JobConfig& j) {
       ApplyTable<BackfillConfig>(*site.node.as_table(), kBackfillKeys, {}, "job.backfill",
                                  site.path, site.reporter, j.backfill);
     }},
    {"alert", Kind::kTable, "table: max_lag, webhook", "see job.alert",
     "Lag alerting, e.g. { max_lag = \"15m\" }.",
     +[](const Value&, const Site& site, JobConfig& j) {
       ApplyTable<AlertConfig>(*site.node.as_table(), kAlertKeys, {}, "job.alert", site.path,
                               site.reporter, j.alert);
     }},
    {"step", Kind::kTableArray, "[[job.step]] tables", "required",
     "The ordered steps of every run; at least one.", ApplySteps},
};

// "3d", "1h30m", "0s": the shortest compound ParseDuration reads back.
std::string FormatDuration(seconds d) {
  if (d.count() == 0) return "0s";
  std::string out;
  int64_t left = d.count();
  for (const auto& [unit, size] : {std::pair{'d', 86400}, {'h', 3600}, {'m', 60}, {'s', 1}}) {
    if (left >= size) {
      out += fmt::format("{}{}", left / size, unit);
      left %= size;
    }
  }
  return out;
}

// Checks that need several keys of one job (the keys themselves are valid).
void CheckJob(const toml::table& table, const std::string& path, Reporter& reporter,
              const JobConfig& job) {
  const toml::node* schedule = table.get("schedule");
  const toml::node* timezone = table.get("timezone");
  const bool have_schedule = schedule != nullptr && schedule->is_string();
  const bool have_timezone = timezone != nullptr && timezone->is_string();
  bool zone_ok = false;
  if (have_timezone) {
    auto zone = Schedule::Create("* * * * *", job.timezone);
    zone_ok = zone.ok();
    if (!zone_ok) reporter.Add(LineOf(*timezone), path + ".timezone", zone.status().message());
  }
  if (have_schedule) {
    auto s = Schedule::Create(job.schedule, zone_ok ? std::string_view(job.timezone) : "UTC",
                              job.ScheduleOptionsFor());
    if (!s.ok()) reporter.Add(LineOf(*schedule), path + ".schedule", s.status().message());
  }
  if (const toml::node* command = table.get("partitions_command");
      command != nullptr && table.contains("partitions")) {
    reporter.Add(LineOf(*command), path + ".partitions_command",
                 "partitions and partitions_command cannot both be set; keep one");
  }
  if (job.backfill.auto_within > job.backfill.horizon) {
    const toml::node* backfill = table.get("backfill");
    reporter.Add(backfill != nullptr ? LineOf(*backfill) : LineOf(table),
                 path + ".backfill.auto_within",
                 fmt::format("auto_within ({}) must not exceed horizon ({})",
                             FormatDuration(job.backfill.auto_within),
                             FormatDuration(job.backfill.horizon)));
  }
  const toml::node* steps = table.get("step");
  if (steps == nullptr || !steps->is_array_of_tables()) return;
  std::set<std::string_view> seen;
  for (const toml::node& step : *steps->as_array()) {
    const auto* name = step.as_table()->get_as<std::string>("name");
    if (name == nullptr || !IsValidName(name->get())) continue;
    if (!seen.insert(name->get()).second) {
      reporter.Add(LineOf(*name), fmt::format("{}.step[{}].name", path, name->get()),
                   fmt::format("duplicate step name {} in this job", Quote(name->get())));
    }
  }
}

void ApplyJobs(const Value&, const Site& site, Config& config) {
  std::size_t n = 0;
  for (const toml::node& node : *site.node.as_array()) {
    const toml::table& table = *node.as_table();
    const std::string path = Label(table, site.path, ++n);
    JobConfig job;
    job.line = LineOf(table);
    ApplyTable<JobConfig>(table, kJobKeys, kLaterJobKeys, "job", path, site.reporter, job);
    CheckJob(table, path, site.reporter, job);
    if (!job.name.empty()) {
      if (const JobConfig* first = config.FindJob(job.name)) {
        const toml::node* name = table.get("name");
        site.reporter.Add(LineOf(*name), path + ".name",
                          fmt::format("duplicate job name {} (first defined at line {})",
                                      Quote(job.name), first->line));
      }
    }
    config.jobs.push_back(std::move(job));
  }
}

const KeySpec<Config> kRootKeys[] = {
    {"server", Kind::kTable, "[server] table", "required",
     "The process: store, listen address, workers.",
     +[](const Value&, const Site& site, Config& c) {
       ApplyTable<ServerConfig>(*site.node.as_table(), kServerKeys, kLaterServerKeys, "server",
                                site.path, site.reporter, c.server);
     }},
    {"job", Kind::kTableArray, "[[job]] tables", "none", "The jobs; a config may have none.",
     ApplyJobs},
};

template <typename T>
void AddDocs(std::string_view section, std::span<const KeySpec<T>> specs,
             std::vector<KeyDoc>& out) {
  for (const auto& spec : specs) {
    out.push_back({std::string(section), std::string(spec.key), TypeDoc(spec),
                   std::string(spec.deflt), std::string(spec.meaning)});
  }
}

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

std::string ConfigDir(const std::string& path) {
  std::error_code ec;
  std::filesystem::path abs = std::filesystem::absolute(path, ec);
  if (ec) abs = path;
  return abs.lexically_normal().parent_path().string();
}

}  // namespace

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

std::vector<KeyDoc> DocumentedKeys() {
  std::vector<KeyDoc> out;
  AddDocs<Config>("", kRootKeys, out);
  AddDocs<ServerConfig>("server", kServerKeys, out);
  AddDocs<JobConfig>("job", kJobKeys, out);
  AddDocs<BackfillConfig>("job.backfill", kBackfillKeys, out);
  AddDocs<AlertConfig>("job.alert", kAlertKeys, out);
  AddDocs<StepConfig>("job.step", kStepKeys, out);
  return out;
}

std::variant<Config, ConfigErrors> ParseConfig(std::string_view text, const std::string& path) {
  Config config;
  config.path = path;
  config.dir = ConfigDir(path);
  Reporter reporter(path, config.dir);
  toml::table root;
  try {
    root = toml::parse(text, std::string_view{path});
  } catch (const toml::parse_error& e) {
    reporter.Add(static_cast<int>(e.source().begin.line), "",
                 fmt::format("TOML syntax error: {}", e.description()));
    return ConfigErrors{reporter.Take()};
  }
  ApplyTable<Config>(root, kRootKeys, {}, "", "", reporter, config);
  if (!reporter.empty()) return ConfigErrors{reporter.Take()};
  return config;
}

std::variant<Config, ConfigErrors> LoadConfig(const std::string& path) {
  std::string error;
  const auto text = ReadFile(path, error);
  if (!text) {
    return ConfigErrors{{{path, 0, "", fmt::format("cannot read the configuration: {}", error)}}};
  }
  return ParseConfig(*text, path);
}

}  // namespace cronledger::config
