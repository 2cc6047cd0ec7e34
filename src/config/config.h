// The configuration users write (TOML): [server] and [[job]] tables.
//
// LoadConfig() reads and validates a whole file and either returns a Config
// in which every value is checked and every default applied, or the list of
// every problem found, each with file:line and the key. Nothing else in
// cronledger parses configuration. Keys and defaults: docs/config.md.
#ifndef CRONLEDGER_CONFIG_CONFIG_H_
#define CRONLEDGER_CONFIG_CONFIG_H_

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "cronledger/schedule.h"
#include "ledger/catchup.h"
#include "ledger/overlap.h"
#include "ledger/retry_policy.h"

namespace cronledger::config {

enum class Durability { kFull, kNormal };
enum class Executor { kSubprocess, kInprocess, kExternal };

struct ServerConfig {
  // "sqlite:/abs/path.db" after resolution against the config's folder, or
  // a "postgresql://..." URL as written.
  std::string store;
  std::string listen = "127.0.0.1:8377";
  std::string node_id;  // default: host name and listen port
  int max_workers = 8;
  Durability durability = Durability::kFull;
  std::chrono::seconds drain_timeout{30};
  // Runs claimed beyond the free workers, as many as they would start within
  // this time at the recent pace (docs/execution.md, Claiming ahead). 0: off.
  std::chrono::milliseconds claim_ahead{0};
  std::string log_dir;  // absolute; default: "logs" beside the config file
  std::chrono::seconds log_retention{30 * 86400};
  // Finished runs older than this are purged with their attempts, events
  // and effects (docs/deploy.md, Retention).
  std::chrono::seconds retention{400 * 86400};
  uint64_t output_cap = 1 << 20;  // bytes, per attempt and stream
  bool metrics_public = false;    // GET /metrics without a token
  // The HTTP API's limits (docs/api.md, Limits). max_body 0: unset, the
  // API derives it from output_cap (what a step's effect result needs).
  uint64_t max_body = 0;
  std::chrono::seconds request_timeout{30};
  int max_connections = 512;
  int max_connections_per_peer = 64;  // non-loopback peers only
  // Pinged (GET) after successful planner passes: a dead man's switch
  // (docs/alerts.md). Empty: none.
  std::string heartbeat_url;
  // Where people reach this node's dashboard and API from outside, without
  // a trailing slash: alert notices link to it (docs/alerts.md). Empty: none.
  std::string public_url;
};

// Retry policy (docs/execution.md, Outcomes): max_attempts counts the first;
// backoff before attempt n+1 is min(max_backoff, initial_backoff *
// multiplier^(n-1)) scaled by a uniform factor in [1 - jitter, 1 + jitter];
// max_retry_duration counts from the first attempt's start.
struct StepConfig {
  std::string name;
  std::vector<std::string> command;  // absolute path or resolved against the config folder
  std::chrono::seconds timeout{3600};
  bool idempotent = false;
  // Files (placeholders allowed) copied and kept with the attempt.
  std::vector<std::string> keep_inputs;
  int line = 0;  // where the [[job.step]] starts, for messages
};

struct BackfillConfig {
  std::chrono::seconds auto_within{0};
  std::chrono::seconds horizon{30 * 86400};
};

// How alert.webhook notices are written (docs/alerts.md).
enum class AlertFormat { kJson, kSlack };

struct AlertConfig {
  std::chrono::seconds max_lag{3600};
  std::string webhook;  // empty: none
  AlertFormat format = AlertFormat::kJson;
  // argv, the notice as JSON on stdin; argv[0] resolved against the config
  // folder like a step's. Empty: none.
  std::vector<std::string> command;
  // Run alerts of one job, business date, kind and step that start within
  // this long of the first go out as one notice (docs/alerts.md). 0: each
  // pass's own.
  std::chrono::seconds group_window{60};

  // Whether the job's alerts go anywhere (the alerter watches only these).
  bool HasTargets() const { return !webhook.empty() || !command.empty(); }
};

struct JobConfig {
  std::string name;
  std::string schedule;
  std::string timezone;
  int date_offset_days = 0;
  // The first business date the job is expected to have a key for; unset:
  // the job's first recorded occurrence (docs/gaps.md, Start date).
  std::optional<std::chrono::year_month_day> start_date;
  std::optional<PeriodKey> key;  // unset: Schedule::DefaultKey()
  DstGapPolicy dst_gap = DstGapPolicy::kShift;
  std::optional<DstRepeatPolicy> dst_repeat;
  // Exactly one of these describes the partition set; both empty means the
  // single partition "default".
  std::vector<std::string> partitions;
  std::vector<std::string> partitions_command;
  int max_concurrency = 0;  // 0: limited only by server.max_workers
  std::chrono::seconds misfire_grace{3600};
  ledger::Catchup catchup = ledger::Catchup::kAll;
  ledger::OnPause on_pause = ledger::OnPause::kHold;
  BackfillConfig backfill;
  AlertConfig alert;
  std::vector<StepConfig> steps;
  Executor executor = Executor::kSubprocess;
  // Unset: three times the longest step timeout.
  std::optional<std::chrono::seconds> lease_ttl;
  ledger::Overlap overlap = ledger::Overlap::kQueue;
  ledger::RetryPolicy retry;
  std::vector<int> retry_exit_codes;  // override the default classes
  std::vector<int> fail_exit_codes;
  std::vector<std::pair<std::string, std::string>> env;  // in file order
  std::vector<std::string> env_from_host;  // names, passed through, never stored
  int line = 0;  // where the [[job]] starts

  std::chrono::seconds EffectiveLeaseTtl() const {
    if (lease_ttl) return *lease_ttl;
    std::chrono::seconds longest{0};
    for (const auto& s : steps) longest = std::max(longest, s.timeout);
    return 3 * longest;
  }

  // The key in force: `key`, or the schedule's default.
  PeriodKey EffectiveKey(const Schedule& schedule) const {
    return key ? *key : schedule.DefaultKey();
  }
  ScheduleOptions ScheduleOptionsFor() const {
    ScheduleOptions o;
    o.dst_gap = dst_gap;
    o.dst_repeat = dst_repeat;
    o.date_offset_days = date_offset_days;
    return o;
  }
};

// What an API token may do (docs/api.md, authentication): `read` the
// operator routes; `operate`, read and the operator actions; `worker`, only
// the external-worker routes.
enum class TokenRole { kRead, kOperate, kWorker };

// One [[auth.token]] entry. The secret itself is never in the file: it is
// read from the environment variable `secret_env` when serve starts.
struct TokenConfig {
  std::string name;
  TokenRole role = TokenRole::kRead;
  std::string secret_env;
  int line = 0;  // where the [[auth.token]] starts, for messages
};

struct AuthConfig {
  std::vector<TokenConfig> tokens;  // none: serve makes a local operator token
};

struct Config {
  std::string path;  // the file as given
  std::string dir;   // its folder, absolute; relative paths resolve here
  ServerConfig server;
  AuthConfig auth;
  std::vector<JobConfig> jobs;

  const JobConfig* FindJob(std::string_view name) const {
    for (const auto& j : jobs) {
      if (j.name == name) return &j;
    }
    return nullptr;
  }
};

// One problem: "cronledger.toml:12: job[daily_report].schedule: <what>".
struct ConfigProblem {
  std::string file;
  int line = 0;  // 0 when the problem has no position (file unreadable)
  std::string key;
  std::string message;
  std::string ToString() const;
};

struct ConfigErrors {
  std::vector<ConfigProblem> problems;
  // One problem per line.
  std::string ToString() const;
};

// Reads, parses and validates `path`. Every problem is reported, not just
// the first.
std::variant<Config, ConfigErrors> LoadConfig(const std::string& path);

// The folder of the config file at `path`, absolute (Config::dir): where
// relative paths in it resolve, and where serve keeps cronledger.token.
std::string ConfigDir(const std::string& path);
// The same for text already in memory; `path` names it in messages and
// decides the folder relative paths resolve against.
std::variant<Config, ConfigErrors> ParseConfig(std::string_view text, const std::string& path);

// A token's secret read from its environment variable.
struct TokenSecret {
  const TokenConfig* token = nullptr;  // in config.auth.tokens
  std::string secret;
};

// Reads the secret of every [[auth.token]] through `getenv` (std::getenv in
// serve). A variable that is unset or empty, a secret shorter than 16 bytes
// and two tokens with the same secret are problems naming the entry; the
// messages never contain a secret.
std::variant<std::vector<TokenSecret>, ConfigErrors> ResolveTokenSecrets(
    const Config& config, const std::function<const char*(const char*)>& getenv);

// Why `id` cannot name a node (server.node_id, serve --node-id), "" when it
// can: 1-128 characters of UTF-8 without ASCII spaces or control characters.
std::string NodeIdProblem(std::string_view id);

// What is wrong with a PostgreSQL URL (server.store, migrate-store --to),
// "" when nothing: libpq must read it and it must name the database. The
// message never repeats the URL, which may hold a password.
std::string PostgresUrlProblem(const std::string& url);

// Why `listen` (host:port) cannot be listened on, "" when it can: a
// malformed address, or a host that is not loopback while no tokens are
// configured (`tokens_configured`).
std::string ListenProblem(std::string_view listen, bool tokens_configured);

// One accepted key, as documented in docs/config.md: the same table drives
// parsing, the messages and this list (a test compares it with the docs).
// `section` is "" (top level), "server", "auth", "auth.token", "job",
// "job.backfill", "job.alert", "job.retry" or "job.step"; `default_value` is
// "required" for a required key.
struct KeyDoc {
  std::string section;
  std::string key;
  std::string type;
  std::string default_value;
  std::string meaning;
};
std::vector<KeyDoc> DocumentedKeys();

// Valid partition id: kPartitionIdRule. Messages refusing one quote the rule.
// Not "." or "..", nor a leading "-": an id is a folder of the attempt logs
// and may be an argument of a partitions_command.
inline constexpr std::string_view kPartitionIdRule =
    "1-128 characters from A-Z a-z 0-9 . _ - : @, not starting with - and not . or ..";
bool IsValidPartitionId(std::string_view id);
// "3d", "1h30m", "500ms": a duration as the config writes it.
std::string FormatDuration(std::chrono::milliseconds d);
// Valid job or step name: kNameRule (a job's name is a folder of its
// attempt logs).
inline constexpr std::string_view kNameRule = "1-64 characters from A-Z a-z 0-9 . _ -, not . or ..";
bool IsValidName(std::string_view name);

// "30s", "1h30m", "250ms" (units ms s m h d, compounds allowed, largest
// unit first).
Result<std::chrono::milliseconds> ParseDuration(std::string_view text);
// "1MiB", "512KiB", "2GiB", or a plain number of bytes.
Result<uint64_t> ParseSize(std::string_view text);

}  // namespace cronledger::config

#endif  // CRONLEDGER_CONFIG_CONFIG_H_
