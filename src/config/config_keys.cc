// The keys of cronledger.toml: one KeySpec row per key (config_internal.h),
// grouped by section, with each key's own checks and the checks that need
// several keys of a job. DocumentedKeys() renders the same rows, and a test
// compares them with docs/config.md.
#include <arpa/inet.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <set>
#include <span>
#include <string_view>
#include <type_traits>

#include "config/config.h"
#include "config/config_internal.h"

namespace cronledger::config {
namespace internal {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

template <typename T>
std::string TypeDoc(const KeySpec<T>& spec) {
  if (!spec.type.empty()) return std::string(spec.type);
  switch (spec.kind) {
    case Kind::kString:
      return "string";
    case Kind::kInt:
      return fmt::format("integer {}..{}", spec.min, spec.max);
    case Kind::kNumber:
      return spec.max >= spec.min ? fmt::format("number {}..{}", spec.min, spec.max)
                                  : fmt::format("number >= {}", spec.min);
    case Kind::kBool:
      return "boolean";
    case Kind::kDuration:
      return spec.min > 0 ? "duration > 0" : "duration >= 0";
    case Kind::kDurationMs:
      return spec.min > 0 ? "duration > 0, ms allowed" : "duration >= 0, ms allowed";
    case Kind::kSize:
      return fmt::format("size {}..{}", FormatSize(static_cast<uint64_t>(spec.min)),
                         FormatSize(static_cast<uint64_t>(spec.max)));
    case Kind::kChoice:
      return ChoiceList(spec.choices);
    case Kind::kStringArray:
      return "array of strings";
    case Kind::kIntArray:
      return fmt::format("array of integers {}..{}", spec.min, spec.max);
    case Kind::kTable:
      return "table";
    case Kind::kTableArray:
      return "array of tables";
  }
  return "";
}

// ---- checks shared by several keys ----------------------------------------------

// A relative program path with a '/' ("./bin/report", "bin/report") resolves
// against the config folder; a bare name ("python3") is looked up in PATH.
std::string ResolveProgram(const std::string& program, const std::string& dir) {
  if (program.find('/') == std::string::npos || program.front() == '/') return program;
  return (std::filesystem::path(dir) / program).lexically_normal().string();
}

// A folder: absolute, or resolved against the config's folder; no trailing /.
std::string ResolvePath(const std::string& path, const std::string& dir) {
  std::filesystem::path p = (std::filesystem::path(dir) / path).lexically_normal();
  if (!p.has_filename() && p.has_relative_path()) p = p.parent_path();
  return p.string();
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

// "sqlite:PATH" (PATH made absolute) or a PostgreSQL connection URI, kept
// as written (libpq reads it; the password, if any, never reaches a log).
void ApplyStore(const Value& v, const Site& site, ServerConfig& s) {
  const std::string& text = v.text;
  if (text.starts_with("postgresql://") || text.starts_with("postgres://")) {
    if (std::string problem = PostgresUrlProblem(text); !problem.empty()) {
      return site.Error(problem);
    }
    s.store = text;
    return;
  }
  if (!text.starts_with("sqlite:")) {
    // A mistyped PostgreSQL URL may hold a password: only its scheme shown.
    const std::size_t secret = std::min(text.find(':'), text.find('@'));
    const bool may_hold_secret = text.find('@') != std::string::npos ||
                                 text.find("password") != std::string::npos;
    return site.Error(fmt::format(
        "{} is not a store; use sqlite:FILE, e.g. \"sqlite:cronledger.db\", or "
        "postgresql://USER@HOST/DB",
        may_hold_secret ? Quote(text.substr(0, secret)) + " (the rest not shown)" : Quote(text)));
  }
  const std::string file = text.substr(7);
  if (file.empty()) {
    return site.Error("\"sqlite:\" names no file; use sqlite:FILE, e.g. \"sqlite:cronledger.db\"");
  }
  s.store =
      "sqlite:" + (std::filesystem::path(site.reporter.dir()) / file).lexically_normal().string();
}

// Why `text` is not host:port (IPv6 in brackets), "" when it is; the host
// without brackets in `host`.
std::string ListenSyntaxProblem(const std::string& text, std::string* host) {
  std::string port;
  if (text.starts_with("[")) {
    const std::size_t close = text.find("]:");
    if (close == std::string::npos) {
      return fmt::format("{} is not host:port; e.g. \"[::1]:8377\"", Quote(text));
    }
    *host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    const std::size_t colon = text.rfind(':');
    if (colon == std::string::npos) {
      return fmt::format("{} has no port; use host:port, e.g. \"127.0.0.1:8377\"", Quote(text));
    }
    *host = text.substr(0, colon);
    port = text.substr(colon + 1);
    if (host->find(':') != std::string::npos) {
      return fmt::format("{}: write an IPv6 address in brackets, e.g. \"[::1]:8377\"",
                         Quote(text));
    }
  }
  const bool port_ok =
      !port.empty() && port.size() <= 5 &&
      std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
      std::stoi(port) <= 65535;
  if (!port_ok) {
    return fmt::format("port {} must be a number from 0 (any free port) to 65535", Quote(port));
  }
  return "";
}

bool IsLoopbackHost(const std::string& host) {
  in_addr v4{};
  in6_addr v6{};
  return host == "localhost" ||
         (inet_pton(AF_INET, host.c_str(), &v4) == 1 && (ntohl(v4.s_addr) >> 24) == 127) ||
         (inet_pton(AF_INET6, host.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6));
}

// host:port, IPv6 in brackets. Whether a non-loopback host is allowed
// depends on [[auth.token]]: CheckAcrossSections decides.
void ApplyListen(const Value& v, const Site& site, ServerConfig& s) {
  std::string host;
  if (std::string problem = ListenSyntaxProblem(v.text, &host); !problem.empty()) {
    return site.Error(std::move(problem));
  }
  s.listen = v.text;
}

// ---- environment variable names ---------------------------------------------------

constexpr std::string_view kContractVariables[] = {"PATH", "HOME", "LANG", "TZ"};

// Why `name` cannot be set in a step's environment; empty when it can.
std::string EnvNameProblem(std::string_view name) {
  const auto word = [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  };
  if (name.empty() || (name[0] >= '0' && name[0] <= '9') ||
      !std::all_of(name.begin(), name.end(), word)) {
    return fmt::format(
        "{} is not a valid variable name: use A-Z a-z 0-9 _, not starting with a digit",
        Quote(name));
  }
  if (name.starts_with("CRONLEDGER_")) {
    return fmt::format("{} is reserved: cronledger sets the CRONLEDGER_ variables of every step",
                       Quote(name));
  }
  if (std::find(std::begin(kContractVariables), std::end(kContractVariables), name) !=
      std::end(kContractVariables)) {
    return fmt::format("{} is reserved: cronledger sets PATH, HOME, LANG and TZ for every step",
                       Quote(name));
  }
  return "";
}

// ---- the key tables --------------------------------------------------------------

// Setters for keys that need no check beyond their kind's: one line each in
// the tables. `M` is a pointer to the member the key sets.
template <auto M>
struct MemberOf;
template <typename T, typename V, V T::*M>
struct MemberOf<M> {
  using Class = T;
  using Type = V;
};
template <auto M>
using ClassOf = typename MemberOf<M>::Class;

// The kind's field F of the value, as the member's type.
template <auto M, auto F>
void SetFrom(const Value& v, const Site&, ClassOf<M>& t) {
  t.*M = static_cast<typename MemberOf<M>::Type>(v.*F);
}
template <auto M>
constexpr auto SetInt = &SetFrom<M, &Value::integer>;
template <auto M>
constexpr auto SetNumber = &SetFrom<M, &Value::number>;
template <auto M>
constexpr auto SetBool = &SetFrom<M, &Value::boolean>;
template <auto M>
constexpr auto SetString = &SetFrom<M, &Value::text>;
template <auto M>
constexpr auto SetSize = &SetFrom<M, &Value::size>;
// Into milliseconds, seconds or an optional of seconds (kDuration keys hold
// whole seconds).
template <auto M>
void SetDuration(const Value& v, const Site&, ClassOf<M>& t) {
  if constexpr (std::is_same_v<typename MemberOf<M>::Type, milliseconds>) {
    t.*M = v.duration;
  } else {
    t.*M = std::chrono::duration_cast<seconds>(v.duration);
  }
}
// `kValues` lists the enum values in the order of the key's choices.
template <auto M, const auto& kValues>
void SetChoice(const Value& v, const Site&, ClassOf<M>& t) {
  t.*M = kValues[v.choice];
}
template <auto M>
void SetName(const Value& v, const Site& site, ClassOf<M>& t) {
  if (!IsValidName(v.text)) {
    return site.Error(fmt::format("{} is not a valid name: use {}", Quote(v.text), kNameRule));
  }
  t.*M = v.text;
}
// Exit codes (kIntArray, the range already checked): unique.
template <auto M>
void SetExitCodes(const Value& v, const Site& site, ClassOf<M>& t) {
  std::set<int64_t> seen;
  bool ok = true;
  for (std::size_t i = 0; i < v.integers.size(); ++i) {
    if (!seen.insert(v.integers[i]).second) {
      site.ErrorAt(*v.elements[i], fmt::format("duplicate exit code {}", v.integers[i]));
      ok = false;
    }
  }
  if (!ok) return;
  for (const int64_t code : v.integers) (t.*M).push_back(static_cast<int>(code));
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
constexpr ledger::Catchup kCatchups[] = {ledger::Catchup::kAll, ledger::Catchup::kLatest, ledger::Catchup::kNone};
constexpr std::string_view kOnPauseChoices[] = {"hold", "skip"};
constexpr ledger::OnPause kOnPauses[] = {ledger::OnPause::kHold, ledger::OnPause::kSkip};
constexpr std::string_view kExecutorChoices[] = {"subprocess", "inprocess", "external"};
constexpr Executor kExecutors[] = {Executor::kSubprocess, Executor::kInprocess,
                                   Executor::kExternal};
constexpr std::string_view kAlertFormatChoices[] = {"json", "slack"};
constexpr AlertFormat kAlertFormats[] = {AlertFormat::kJson, AlertFormat::kSlack};
constexpr std::string_view kOverlapChoices[] = {"queue", "skip", "allow"};
constexpr ledger::Overlap kOverlaps[] = {ledger::Overlap::kQueue, ledger::Overlap::kSkip, ledger::Overlap::kAllow};

void ApplyNodeId(const Value& v, const Site& site, ServerConfig& s) {
  if (std::string problem = NodeIdProblem(v.text); !problem.empty()) return site.Error(problem);
  s.node_id = v.text;
}

void ApplyLogDir(const Value& v, const Site& site, ServerConfig& s) {
  if (v.text.empty()) {
    return site.Error("must not be empty; omit the key for \"logs\" beside the config file");
  }
  s.log_dir = ResolvePath(v.text, site.reporter.dir());
}

bool IsHttpUrl(const std::string& text) {
  return (text.starts_with("http://") && text.size() > 7) ||
         (text.starts_with("https://") && text.size() > 8);
}

void ApplyWebhook(const Value& v, const Site& site, AlertConfig& a) {
  if (!IsHttpUrl(v.text)) {
    return site.Error(fmt::format("{} is not an http:// or https:// URL", Quote(v.text)));
  }
  a.webhook = v.text;
}

void ApplyHeartbeatUrl(const Value& v, const Site& site, ServerConfig& s) {
  if (!IsHttpUrl(v.text)) {
    return site.Error(fmt::format("{} is not an http:// or https:// URL", Quote(v.text)));
  }
  s.heartbeat_url = v.text;
}

// A base for links: no query or fragment to append a path to, and one
// trailing slash at most (dropped, so that links read base + "/#/run/7").
void ApplyPublicUrl(const Value& v, const Site& site, ServerConfig& s) {
  if (!IsHttpUrl(v.text)) {
    return site.Error(fmt::format("{} is not an http:// or https:// URL", Quote(v.text)));
  }
  if (v.text.find_first_of("?#") != std::string::npos) {
    return site.Error(fmt::format(
        "{} has a query or fragment; give the address the dashboard is served at, such as "
        "\"https://cron.example.com\"",
        Quote(v.text)));
  }
  std::string url = v.text;
  if (url.ends_with('/')) url.pop_back();
  s.public_url = std::move(url);
}

// The alert's command: an argv like a step's, without placeholders (the
// notice comes on stdin).
void ApplyAlertCommand(const Value& v, const Site& site, AlertConfig& a) {
  std::vector<std::string> argv;
  if (CheckArgv(v, site, argv)) a.command = std::move(argv);
}

void ApplyCommand(const Value& v, const Site& site, StepConfig& s) {
  std::vector<std::string> argv;
  const bool argv_ok = CheckArgv(v, site, argv);
  if (CheckPlaceholders(v, site) && argv_ok) s.command = std::move(argv);
}

// Paths kept as written: placeholders are substituted and a relative path
// resolved for each run, when the step runs.
void ApplyKeepInputs(const Value& v, const Site& site, StepConfig& s) {
  bool ok = true;
  for (std::size_t i = 0; i < v.strings.size(); ++i) {
    if (v.strings[i].empty()) {
      site.ErrorAt(*v.elements[i], fmt::format("element {} is an empty string", i + 1));
      ok = false;
    }
  }
  if (CheckPlaceholders(v, site) && ok) s.keep_inputs = v.strings;
}

void ApplyPartitionsCommand(const Value& v, const Site& site, JobConfig& j) {
  std::vector<std::string> argv;
  if (CheckArgv(v, site, argv)) j.partitions_command = std::move(argv);
}

// An inline table of strings, kept in file order (toml++ sorts a table's
// keys, so the order is their position in the file).
void ApplyEnv(const Value&, const Site& site, JobConfig& j) {
  std::vector<std::pair<std::string_view, const toml::node*>> entries;
  for (const auto& [key, node] : *site.node.as_table()) entries.emplace_back(key.str(), &node);
  std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
    const auto& x = a.second->source().begin;
    const auto& y = b.second->source().begin;
    return x.line != y.line ? x.line < y.line : x.column < y.column;
  });
  bool ok = true;
  std::vector<std::pair<std::string, std::string>> env;
  for (const auto& [name, node] : entries) {
    const Site entry{site.reporter, *node, JoinPath(site.path, name)};
    if (std::string problem = EnvNameProblem(name); !problem.empty()) {
      entry.Error(std::move(problem));
      ok = false;
    } else if (!node->is_string()) {
      entry.Error(fmt::format("expected a string, got {}", TypeName(*node)));
      ok = false;
    } else if (node->as_string()->get().find('\0') != std::string::npos) {
      entry.Error("must not contain a NUL character");
      ok = false;
    } else {
      env.emplace_back(name, node->as_string()->get());
    }
  }
  if (ok) j.env = std::move(env);
}

void ApplyEnvFromHost(const Value& v, const Site& site, JobConfig& j) {
  bool ok = true;
  std::set<std::string_view> seen;
  for (std::size_t i = 0; i < v.strings.size(); ++i) {
    if (std::string problem = EnvNameProblem(v.strings[i]); !problem.empty()) {
      site.ErrorAt(*v.elements[i], std::move(problem));
      ok = false;
    } else if (!seen.insert(v.strings[i]).second) {
      site.ErrorAt(*v.elements[i], fmt::format("duplicate name {}", Quote(v.strings[i])));
      ok = false;
    }
  }
  if (ok) j.env_from_host = v.strings;
}

const KeySpec<ServerConfig> kServerKeys[] = {
    {"store", Kind::kString, "string: sqlite:FILE or postgresql://USER@HOST/DB", "required",
     "The ledger's database. FILE is relative to the config's folder. A PostgreSQL URL (libpq "
     "syntax, naming the database) lets several nodes share one ledger (docs/deploy.md).",
     ApplyStore},
    {"listen", Kind::kString, "string: host:port", "127.0.0.1:8377",
     "Address of the HTTP API, which steps reach as `CRONLEDGER_API`. Loopback hosts only "
     "(127.x.x.x, [::1], localhost) unless [[auth.token]] entries exist. Port 0 takes any free "
     "port; "
     "`serve` logs the address it got. A port already in use stops `serve` at start (exit 2).",
     ApplyListen},
    {"node_id", Kind::kString, "string", "host name and listen port",
     "Names this process in attempts and events: 1-128 characters, no spaces.", ApplyNodeId},
    {"max_workers", Kind::kInt, "", "8", "Steps this process runs at once, over all jobs.",
     SetInt<&ServerConfig::max_workers>, 1, 1024},
    {"durability", Kind::kChoice, "", "full",
     "SQLite synchronous mode: full survives power loss; normal may lose the last commits.",
     SetChoice<&ServerConfig::durability, kDurabilities>, 0, 0, kDurabilityChoices},
    {"drain_timeout", Kind::kDuration, "", "30s",
     "On SIGTERM or SIGINT, how long running steps may go on before they are stopped; 0: stop "
     "them at once.",
     SetDuration<&ServerConfig::drain_timeout>, 0},
    {"claim_ahead", Kind::kDurationMs, "", "0s",
     "Claim more runs than free workers, as many as would start within this time at the recent "
     "pace of runs, so short runs are claimed in batches (docs/execution.md); 0: claim only for "
     "free workers.",
     SetDuration<&ServerConfig::claim_ahead>, 0},
    {"log_dir", Kind::kString, "string: folder", "logs",
     "Where each attempt's stdout and stderr are written; relative to the config's folder.",
     ApplyLogDir},
    {"log_retention", Kind::kDuration, "", "30d",
     "Attempt logs and kept inputs older than this are deleted.",
     SetDuration<&ServerConfig::log_retention>, 1},
    {"retention", Kind::kDuration, "", "400d",
     "Finished runs (succeeded, failed, skipped, cancelled) older than this are purged with their "
     "attempts, events and effects; runs in any other state are kept. Never less than the "
     "longest backfill.horizon of any job plus a day: a shorter value is raised to that, so a "
     "purged run is never taken for a gap.",
     SetDuration<&ServerConfig::retention>, 1},
    {"output_cap", Kind::kSize, "", "1MiB",
     "Output of one attempt and stream written to its log; the rest is dropped.",
     SetSize<&ServerConfig::output_cap>, int64_t{1} << 10, int64_t{1} << 30},
    {"max_body", Kind::kSize, "", "6 × output_cap + 192KiB",
     "The largest request body the API reads, counted after chunked transfer coding; a larger "
     "one is refused (413) as soon as it is seen. Bodies are read only from callers the route "
     "accepts, and compressed bodies (Content-Encoding) are refused (415). The default fits a "
     "step's effect result of output_cap bytes with its JSON escaping; less refuses large "
     "results.",
     SetSize<&ServerConfig::max_body>, int64_t{1} << 10, int64_t{1} << 30},
    {"request_timeout", Kind::kDuration, "", "30s",
     "How long a client may take to send one request (headers and body) and to read its "
     "answer; a slower one is disconnected. The time a route takes to answer, such as a "
     "worker's long-poll wait, is not counted.",
     SetDuration<&ServerConfig::request_timeout>, 1},
    {"max_connections", Kind::kInt, "", "512",
     "Connections the API holds open at once. At the limit the connection idle longest is "
     "closed to make room; when none is idle, the new one is answered 503 and closed.",
     SetInt<&ServerConfig::max_connections>, 8, 65536},
    {"max_connections_per_peer", Kind::kInt, "", "64",
     "Connections one non-loopback address may hold open at once; loopback (steps, local "
     "workers, the command line) counts only against max_connections.",
     SetInt<&ServerConfig::max_connections_per_peer>, 1, 65536},
    {"metrics_public", Kind::kBool, "", "false",
     "`GET /metrics` answers without a token (for a Prometheus that cannot send one); otherwise "
     "it needs a token of role read or operate.",
     SetBool<&ServerConfig::metrics_public>},
    {"heartbeat_url", Kind::kString, "string: http(s) URL", "none",
     "A dead man's switch: GET after a successful planner pass, at most once every 30 s, so an "
     "external monitor (Healthchecks-style) notices when no serve plans (docs/alerts.md).",
     ApplyHeartbeatUrl},
    {"public_url", Kind::kString, "string: http(s) URL", "none",
     "The address people open this node's dashboard at (behind a proxy, its outside address): "
     "alert notices link to the run's or the job's page under it (docs/alerts.md).",
     ApplyPublicUrl},
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
     "Where alert notices are POSTed (docs/alerts.md). Only its scheme and host are logged.",
     ApplyWebhook},
    {"format", Kind::kChoice, "", "json",
     "The webhook's body: the alert as JSON, or a Slack incoming-webhook message ({\"text\"}). "
     "Needs webhook.",
     SetChoice<&AlertConfig::format, kAlertFormats>, 0, 0, kAlertFormatChoices},
    {"command", Kind::kStringArray, "", "none",
     "argv run for each notice, never through a shell, with the alert as JSON on stdin; a "
     "relative program path with a / resolves against the config's folder.",
     ApplyAlertCommand},
    {"group_window", Kind::kDuration, "", "1m",
     "Run alerts of one business date, kind and step that start within this long of the first "
     "are sent as one notice, after the window; 0: at once, grouped per pass only.",
     SetDuration<&AlertConfig::group_window>, 0},
};

const KeySpec<ledger::RetryPolicy> kRetryKeys[] = {
    {"max_attempts", Kind::kInt, "", "3", "Attempts in all, the first included; 1: never retried.",
     SetInt<&ledger::RetryPolicy::max_attempts>, 1, 1000},
    {"initial_backoff", Kind::kDurationMs, "", "30s", "The wait before the second attempt.",
     SetDuration<&ledger::RetryPolicy::initial_backoff>, 0},
    {"multiplier", Kind::kNumber, "", "2.0", "Each further wait is the previous one times this.",
     SetNumber<&ledger::RetryPolicy::multiplier>, 1, 0},
    {"max_backoff", Kind::kDurationMs, "", "10m",
     "The longest wait, before jitter; not less than initial_backoff.",
     SetDuration<&ledger::RetryPolicy::max_backoff>, 0},
    {"jitter", Kind::kNumber, "", "0.2",
     "Each wait is scaled by a uniform factor in [1 - jitter, 1 + jitter].",
     SetNumber<&ledger::RetryPolicy::jitter>, 0, 1},
    {"max_retry_duration", Kind::kDuration, "", "6h",
     "No retry is scheduled later than this after the first attempt's start.",
     SetDuration<&ledger::RetryPolicy::max_retry_duration>, 1},
};

const KeySpec<StepConfig> kStepKeys[] = {
    {"name", Kind::kString, "string: 1-64 of A-Z a-z 0-9 . _ -", "required",
     "Unique within the job.", SetName<&StepConfig::name>},
    {"command", Kind::kStringArray, "", "required for subprocess jobs, else none",
     "argv, never run through a shell. Placeholders {partition} {business_date} {period} "
     "{run_key} are substituted inside elements; a relative program path with a / resolves "
     "against the config's folder.",
     ApplyCommand},
    {"timeout", Kind::kDuration, "", "1h", "The step is stopped after this long: an uncertain end.",
     SetDuration<&StepConfig::timeout>, 1},
    {"idempotent", Kind::kBool, "", "false",
     "Safe to run again after an uncertain end; otherwise such a run becomes unknown.",
     SetBool<&StepConfig::idempotent>},
    {"keep_inputs", Kind::kStringArray, "array of paths", "none",
     "Files copied and kept with each attempt for log_retention, to examine a failed run with the "
     "input it saw. Placeholders as in command; relative paths are resolved when the step runs.",
     ApplyKeepInputs},
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
    ApplyTable<StepConfig>(table, kStepKeys, {}, "job.step", Label(table, site.path, ++n),
                           site.reporter, step);
    job.steps.push_back(std::move(step));
  }
}

void ApplyRetry(const Value&, const Site& site, JobConfig& j) {
  const std::size_t before = site.reporter.count();
  ApplyTable<ledger::RetryPolicy>(*site.node.as_table(), kRetryKeys, {}, "job.retry", site.path,
                          site.reporter, j.retry);
  if (site.reporter.count() == before && j.retry.max_backoff < j.retry.initial_backoff) {
    const toml::node* max = site.node.as_table()->get("max_backoff");
    site.reporter.Add(
        LineOf(max != nullptr ? *max : site.node), site.path + ".max_backoff",
        fmt::format("max_backoff ({}) must not be less than initial_backoff ({})",
                    FormatDuration(j.retry.max_backoff), FormatDuration(j.retry.initial_backoff)));
  }
}

void ApplyStartDate(const Value& v, const Site& site, JobConfig& job) {
  const std::string& t = v.text;
  const auto digits = [&](std::size_t from, std::size_t n) {
    return std::all_of(t.begin() + from, t.begin() + from + n,
                       [](char c) { return c >= '0' && c <= '9'; });
  };
  if (t.size() == 10 && t[4] == '-' && t[7] == '-' && digits(0, 4) && digits(5, 2) &&
      digits(8, 2)) {
    const std::chrono::year_month_day d{
        std::chrono::year{std::stoi(t.substr(0, 4))},
        std::chrono::month{static_cast<unsigned>(std::stoi(t.substr(5, 2)))},
        std::chrono::day{static_cast<unsigned>(std::stoi(t.substr(8, 2)))}};
    if (d.ok() && d.year() >= std::chrono::year{1970}) {
      job.start_date = d;
      return;
    }
    if (d.year() >= std::chrono::year{1970}) {
      return site.Error(fmt::format("{} is not a date of the calendar", Quote(t)));
    }
  }
  site.Error(
      fmt::format("{} is not a business date: write YYYY-MM-DD from 1970 on, e.g. "
                  "\"2026-11-20\"",
                  Quote(t)));
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
                   fmt::format("{} is not a valid partition id: use {}", Quote(id),
                               kPartitionIdRule));
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
    {"start_date", Kind::kString, "string: YYYY-MM-DD", "the job's first recorded occurrence",
     "The first business date the job expects a run key for. Keys dated before the job was "
     "first recorded are expected but run only when an operator backfills or triggers them.",
     ApplyStartDate},
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
     "Static partition set: unique ids of 1-128 characters from A-Z a-z 0-9 . _ - : @, not "
     "starting with - and not . or ..",
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
    {"alert", Kind::kTable, "table: max_lag, webhook, format, command, group_window",
     "see job.alert",
     "Alerts (docs/alerts.md), e.g. { max_lag = \"15m\", webhook = \"https://...\" }.",
     +[](const Value&, const Site& site, JobConfig& j) {
       ApplyTable<AlertConfig>(*site.node.as_table(), kAlertKeys, {}, "job.alert", site.path,
                               site.reporter, j.alert);
     }},
    {"executor", Kind::kChoice, "", "subprocess",
     "Who runs the steps: serve, as commands; handlers an embedding application registers; or "
     "HTTP workers. Only subprocess steps need command.",
     SetChoice<&JobConfig::executor, kExecutors>, 0, 0, kExecutorChoices},
    {"lease_ttl", Kind::kDuration, "", "3 x the longest step timeout",
     "A claim expires after this long without a heartbeat (one comes every third of it); the "
     "attempt then ends as lease_expired. Must exceed every step's timeout.",
     SetDuration<&JobConfig::lease_ttl>, 1},
    {"overlap", Kind::kChoice, "", "queue",
     "A run due while the previous period of its partition is pending or running: wait for it, "
     "skip the new run, or run both.",
     SetChoice<&JobConfig::overlap, kOverlaps>, 0, 0, kOverlapChoices},
    {"retry", Kind::kTable,
     "table: max_attempts, initial_backoff, multiplier, max_backoff, jitter, max_retry_duration",
     "see job.retry", "Retry policy, e.g. { max_attempts = 5, initial_backoff = \"1m\" }.",
     ApplyRetry},
    {"retry_exit_codes", Kind::kIntArray, "", "none",
     "Exit codes retried, whatever their default class.",
     SetExitCodes<&JobConfig::retry_exit_codes>, 1, 255},
    {"fail_exit_codes", Kind::kIntArray, "", "none",
     "Exit codes that fail the run without a retry, whatever their default class.",
     SetExitCodes<&JobConfig::fail_exit_codes>, 1, 255},
    {"env", Kind::kTable, "table: NAME = \"value\"", "none",
     "Variables added to each step's environment. Names of A-Z a-z 0-9 _, not starting with a "
     "digit; not PATH, HOME, LANG, TZ or CRONLEDGER_ names.",
     ApplyEnv},
    {"env_from_host", Kind::kStringArray, "array of variable names", "none",
     "Variables passed through from serve's environment, never stored or logged. Names as in "
     "env, and not also in env.",
     ApplyEnvFromHost},
    {"step", Kind::kTableArray, "[[job.step]] tables", "required",
     "The ordered steps of every run; at least one.", ApplySteps},
};

// The element of array key `key` of `table` that holds `value`.
template <typename V>
const toml::node& ElementOf(const toml::table& table, std::string_view key, const V& value) {
  const toml::array& array = *table.get(key)->as_array();
  for (const toml::node& element : array) {
    if (element.value<V>() == value) return element;
  }
  return array;
}

// Checks across the execution keys of one job: the lease against the step
// timeouts, the exit-code classes, env against env_from_host.
void CheckExecution(const toml::table& table, const std::string& path, Reporter& reporter,
                    const JobConfig& job) {
  if (job.lease_ttl) {
    const StepConfig* longest = nullptr;
    for (const auto& s : job.steps) {
      if (longest == nullptr || s.timeout > longest->timeout) longest = &s;
    }
    if (longest != nullptr && *job.lease_ttl <= longest->timeout) {
      reporter.Add(
          LineOf(*table.get("lease_ttl")), path + ".lease_ttl",
          fmt::format("lease_ttl ({}) must be longer than the longest step timeout ({}{}): a "
                      "lease shorter than a step would expire mid-step",
                      FormatDuration(*job.lease_ttl), FormatDuration(longest->timeout),
                      longest->name.empty() ? "" : ", step " + Quote(longest->name)));
    }
  }
  for (const int code : job.fail_exit_codes) {
    if (std::find(job.retry_exit_codes.begin(), job.retry_exit_codes.end(), code) !=
        job.retry_exit_codes.end()) {
      reporter.Add(LineOf(ElementOf<int64_t>(table, "fail_exit_codes", code)),
                   path + ".fail_exit_codes",
                   fmt::format("exit code {} is in both retry_exit_codes and fail_exit_codes; "
                               "keep it in one",
                               code));
    }
  }
  for (const std::string& name : job.env_from_host) {
    const auto in_env = [&](const auto& entry) { return entry.first == name; };
    if (std::any_of(job.env.begin(), job.env.end(), in_env)) {
      reporter.Add(LineOf(ElementOf<std::string>(table, "env_from_host", name)),
                   path + ".env_from_host",
                   fmt::format("{} is also set in env; keep it in one", Quote(name)));
    }
  }
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
  if (const toml::table* alert = table.get_as<toml::table>("alert");
      alert != nullptr && alert->contains("format") && !alert->contains("webhook")) {
    reporter.Add(LineOf(*alert->get("format")), path + ".alert.format",
                 "format shapes the webhook's body, and there is no webhook; set webhook (a "
                 "command always gets the alert as JSON)");
  }
  CheckExecution(table, path, reporter, job);
  const toml::node* steps = table.get("step");
  if (steps == nullptr || !steps->is_array_of_tables()) return;
  // An executor that is not valid (reported) requires nothing.
  const toml::node* executor = table.get("executor");
  const bool subprocess =
      executor == nullptr || executor->value<std::string_view>() == "subprocess";
  std::set<std::string_view> seen;
  std::size_t n = 0;
  for (const toml::node& step : *steps->as_array()) {
    const toml::table& step_table = *step.as_table();
    ++n;
    if (subprocess && !step_table.contains("command")) {
      reporter.Add(LineOf(step_table), Label(step_table, path + ".step", n) + ".command",
                   "required key is missing: steps of executor \"subprocess\" run a command");
    }
    const auto* name = step_table.get_as<std::string>("name");
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
    ApplyTable<JobConfig>(table, kJobKeys, {}, "job", path, site.reporter, job);
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

// ---- [[auth.token]] -----------------------------------------------------------------

constexpr std::string_view kRoleChoices[] = {"read", "operate", "worker"};
constexpr TokenRole kRoles[] = {TokenRole::kRead, TokenRole::kOperate, TokenRole::kWorker};

// Any variable name the process environment can hold (CRONLEDGER_ names
// too: nothing passes it on to steps).
void ApplySecretEnv(const Value& v, const Site& site, TokenConfig& t) {
  const auto word = [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  };
  if (v.text.empty() || (v.text[0] >= '0' && v.text[0] <= '9') ||
      !std::all_of(v.text.begin(), v.text.end(), word)) {
    return site.Error(fmt::format(
        "{} is not a variable name: use A-Z a-z 0-9 _, not starting with a digit (the secret "
        "itself goes in that environment variable, never in this file)",
        Quote(v.text)));
  }
  t.secret_env = v.text;
}

const KeySpec<TokenConfig> kTokenKeys[] = {
    {"name", Kind::kString, "string: 1-64 of A-Z a-z 0-9 . _ -", "required",
     "Unique across tokens; names the caller in logs.", SetName<&TokenConfig::name>},
    {"role", Kind::kChoice, "", "required",
     "read: the GET routes; operate: read and the operator actions; worker: only the "
     "external-worker routes.",
     SetChoice<&TokenConfig::role, kRoles>, 0, 0, kRoleChoices},
    {"secret_env", Kind::kString, "string: variable name", "required",
     "The environment variable of serve that holds the secret (at least 16 bytes); the secret "
     "is never written in the config, the ledger or a log.",
     ApplySecretEnv},
};

void ApplyTokens(const Value&, const Site& site, AuthConfig& auth) {
  std::size_t n = 0;
  for (const toml::node& node : *site.node.as_array()) {
    const toml::table& table = *node.as_table();
    const std::string path = Label(table, site.path, ++n);
    TokenConfig token;
    token.line = LineOf(table);
    ApplyTable<TokenConfig>(table, kTokenKeys, {}, "auth.token", path, site.reporter, token);
    for (const TokenConfig& earlier : auth.tokens) {
      if (!token.name.empty() && earlier.name == token.name) {
        site.reporter.Add(LineOf(*table.get("name")), path + ".name",
                          fmt::format("duplicate token name {} (first defined at line {})",
                                      Quote(token.name), earlier.line));
      }
      if (!token.secret_env.empty() && earlier.secret_env == token.secret_env) {
        site.reporter.Add(
            LineOf(*table.get("secret_env")), path + ".secret_env",
            fmt::format("{} is also the secret of token {}: each token needs its own secret",
                        Quote(token.secret_env), Quote(earlier.name)));
      }
    }
    auth.tokens.push_back(std::move(token));
  }
}

const KeySpec<AuthConfig> kAuthKeys[] = {
    {"token", Kind::kTableArray, "[[auth.token]] tables", "none",
     "The API's bearer tokens; without any, serve makes one operator token in cronledger.token "
     "beside the config file and listens only on loopback.",
     ApplyTokens},
};

const KeySpec<Config> kRootKeys[] = {
    {"server", Kind::kTable, "[server] table", "required",
     "The process: store, listen address, workers, logs.",
     +[](const Value&, const Site& site, Config& c) {
       c.server.log_dir = ResolvePath("logs", site.reporter.dir());
       ApplyTable<ServerConfig>(*site.node.as_table(), kServerKeys, {}, "server",
                                site.path, site.reporter, c.server);
     }},
    {"job", Kind::kTableArray, "[[job]] tables", "none", "The jobs; a config may have none.",
     ApplyJobs},
    {"auth", Kind::kTable, "[auth] table", "none",
     "Who may call the HTTP API: the [[auth.token]] entries.",
     +[](const Value&, const Site& site, Config& c) {
       ApplyTable<AuthConfig>(*site.node.as_table(), kAuthKeys, {}, "auth", site.path,
                              site.reporter, c.auth);
     }},
};

template <typename T>
void AddDocs(std::string_view section, std::span<const KeySpec<T>> specs,
             std::vector<KeyDoc>& out) {
  for (const auto& spec : specs) {
    out.push_back({std::string(section), std::string(spec.key), TypeDoc(spec),
                   std::string(spec.deflt), std::string(spec.meaning)});
  }
}

}  // namespace

std::span<const KeySpec<Config>> RootKeys() { return kRootKeys; }

void CheckAcrossSections(const toml::table& root, Reporter& reporter, const Config& config) {
  const toml::node* listen = root.at_path("server.listen").node();
  if (listen == nullptr || !listen->is_string()) return;
  // A malformed address was reported by ApplyListen already.
  std::string host;
  const std::string text = listen->as_string()->get();
  if (!ListenSyntaxProblem(text, &host).empty()) return;
  if (std::string problem = ListenProblem(text, !config.auth.tokens.empty()); !problem.empty()) {
    reporter.Add(LineOf(*listen), "server.listen", std::move(problem));
  }
}

}  // namespace internal

// What is wrong with a PostgreSQL URL, or "": libpq must read it, and it
// must name the database, which libpq would otherwise take from the user
// name or PGDATABASE. Never the URL itself: it may hold a password.
std::string PostgresUrlProblem(const std::string& url) {
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(url.c_str(), &error);
  if (options == nullptr) {
    std::string why = error != nullptr ? error : "out of memory";
    PQfreemem(error);
    // libpq quotes the offending part, which may be the password.
    why = why.substr(0, why.find(": \""));
    while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
    return fmt::format("the PostgreSQL URL cannot be read ({}); use postgresql://USER@HOST/DB",
                       why);
  }
  bool database = false;
  for (const PQconninfoOption* o = options; o->keyword != nullptr; ++o) {
    if (std::string_view(o->keyword) == "dbname" && o->val != nullptr && *o->val != '\0') {
      database = true;
    }
  }
  PQconninfoFree(options);
  if (!database) {
    return "the PostgreSQL URL names no database; use postgresql://USER@HOST/DB";
  }
  return "";
}

std::string NodeIdProblem(std::string_view id) {
  // nlohmann's strict dump is the UTF-8 check: the id goes into the
  // ledger's JSON and text columns, which take nothing else.
  try {
    (void)nlohmann::json(id).dump();
  } catch (const nlohmann::json::type_error&) {
    return "the value is not a node id: it is not UTF-8";
  }
  // Characters, not bytes: each UTF-8 character has one byte that is not a
  // continuation byte (10xxxxxx).
  const auto characters = std::count_if(id.begin(), id.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  });
  const bool ok = !id.empty() && characters <= 128 && std::none_of(id.begin(), id.end(), [](char c) {
    return static_cast<unsigned char>(c) <= ' ' || c == 0x7f;
  });
  if (ok) return "";
  return fmt::format("{} is not a node id: use 1-128 characters without spaces", internal::Quote(id));
}

std::string ListenProblem(std::string_view listen, bool tokens_configured) {
  std::string host;
  const std::string text(listen);
  if (std::string problem = internal::ListenSyntaxProblem(text, &host); !problem.empty()) {
    return problem;
  }
  if (tokens_configured || internal::IsLoopbackHost(host)) return "";
  return fmt::format(
      "host {} is not a loopback address: listening beyond this machine needs [[auth.token]] "
      "entries; without them serve listens only on 127.x.x.x, ::1 or localhost",
      internal::Quote(host));
}

std::variant<std::vector<TokenSecret>, ConfigErrors> ResolveTokenSecrets(
    const Config& config, const std::function<const char*(const char*)>& getenv) {
  constexpr std::size_t kMinSecretBytes = 16;
  std::vector<ConfigProblem> problems;
  std::vector<TokenSecret> out;
  for (const TokenConfig& t : config.auth.tokens) {
    const std::string key = fmt::format("auth.token[{}].secret_env", t.name);
    const char* value = getenv(t.secret_env.c_str());
    if (value == nullptr || *value == '\0') {
      problems.push_back({config.path, t.line, key,
                          fmt::format("environment variable {} is {}: it must hold the secret of "
                                      "token {}",
                                      internal::Quote(t.secret_env),
                                      value == nullptr ? "not set" : "empty",
                                      internal::Quote(t.name))});
      continue;
    }
    const std::string secret(value);
    if (secret.size() < kMinSecretBytes) {
      problems.push_back(
          {config.path, t.line, key,
           fmt::format("the secret in {} is {} bytes; use at least {} (e.g. `openssl rand -hex "
                       "32`)",
                       internal::Quote(t.secret_env), secret.size(), kMinSecretBytes)});
      continue;
    }
    for (const TokenSecret& earlier : out) {
      if (earlier.secret == secret) {
        problems.push_back({config.path, t.line, key,
                            fmt::format("{} holds the same secret as {} (token {}): each token "
                                        "needs its own secret",
                                        internal::Quote(t.secret_env),
                                        internal::Quote(earlier.token->secret_env),
                                        internal::Quote(earlier.token->name))});
      }
    }
    out.push_back({&t, secret});
  }
  if (!problems.empty()) return ConfigErrors{std::move(problems)};
  return out;
}

std::vector<KeyDoc> DocumentedKeys() {
  using namespace internal;  // NOLINT(build/namespaces): the tables
  std::vector<KeyDoc> out;
  AddDocs<Config>("", kRootKeys, out);
  AddDocs<ServerConfig>("server", kServerKeys, out);
  AddDocs<AuthConfig>("auth", kAuthKeys, out);
  AddDocs<TokenConfig>("auth.token", kTokenKeys, out);
  AddDocs<JobConfig>("job", kJobKeys, out);
  AddDocs<BackfillConfig>("job.backfill", kBackfillKeys, out);
  AddDocs<AlertConfig>("job.alert", kAlertKeys, out);
  AddDocs<ledger::RetryPolicy>("job.retry", kRetryKeys, out);
  AddDocs<StepConfig>("job.step", kStepKeys, out);
  return out;
}

}  // namespace cronledger::config
