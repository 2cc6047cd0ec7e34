// A gap scan over 1,000,000 expected run keys on SQLite (issue 6,
// Performance). Results in docs/benchmarks.md.
//
//   bench/run.sh gaps [--runs N] [--rebuild]
//
// The ledger: 100 daily jobs (spread over the day, in UTC, Asia/Seoul,
// America/New_York and Europe/Berlin, so the window crosses DST changes) x
// 100 partitions x 100 business dates (2026-08-01 .. 2026-11-08). Most runs
// succeeded; a deterministic scattering of keys is a gap of every cause
// (never planned: rows left out, plus a whole day of one job and ten days of
// one partition; misfired; failed; unknown; awaiting_approval; stuck) or
// waived (coalesced, catchup_none, overlap, paused, cancelled). The jobs and
// their partitions are created through the store (JobSync, PartitionSync),
// the runs by plain batched INSERTs in one transaction: seeding is not what
// is measured. The ledger and its config are cached in
// /tmp/cronledger-bench-gaps/ (keyed by schema and generator version).
//
// Each run measures, in fresh processes (so peak RSS is the scan's alone):
//  * in-process: this binary re-executed as `--scan-child`: opens the store,
//    loads the config and times engine::GapScanner::Scan over every job and
//    the window; peak RSS = its VmHWM;
//  * cli: `cronledger gaps --config ... --from ... --to ... --json` with
//    stdout to a file, end to end (process start to exit; wall time, CPU
//    and ru_maxrss from wait4, in a small launcher process of its own);
//    the same with --include-waived.
// Every run's answer is checked against the generator: the number of gaps
// per cause and an order-independent checksum of (run key, cause). A wrong
// answer fails the benchmark. Timing uses the real clock (bench code only).
#include <fcntl.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench_util.h"
#include "config/config.h"
#include "cronledger/clock.h"
#include "cronledger/schedule.h"
#include "engine/gap_scanner.h"
#include "engine/gap_watch.h"
#include "engine/job_definition.h"
#include "store/sqlite/sqlite_store.h"

namespace cronledger {

namespace bench {
const char* const kBenchName = "gaps_bench";
}  // namespace bench

namespace {

using bench::Check;
using bench::Die;
namespace fs = std::filesystem;
using std::chrono::days;
using std::chrono::seconds;
using std::chrono::sys_days;
using std::chrono::sys_seconds;

constexpr int kJobs = 100;
constexpr int kPartitions = 100;
constexpr const char* kFrom = "2026-08-01";
constexpr const char* kTo = "2026-11-08";  // 100 business dates
constexpr std::chrono::year_month_day kFromDate{std::chrono::year{2026}, std::chrono::August,
                                                std::chrono::day{1}};
constexpr std::chrono::year_month_day kToDate{std::chrono::year{2026}, std::chrono::November,
                                              std::chrono::day{8}};
// Bump when the generator changes what it writes.
constexpr int kGeneratorVersion = 1;
constexpr const char* kDir = "/tmp/cronledger-bench-gaps";

std::string DbPath() { return std::string(kDir) + "/ledger.db"; }
std::string ConfigPath() { return std::string(kDir) + "/cronledger.toml"; }
std::string KeyPath() { return std::string(kDir) + "/ledger.key"; }

sys_seconds At(const char* rfc3339) { return *ParseRfc3339(rfc3339); }
int64_t Ms(sys_seconds t) { return t.time_since_epoch().count() * 1000; }

double SecondsSince(Clock::TimePoint start) {
  return std::chrono::duration<double>(RealClock().Now() - start).count();
}

uint64_t Mix(uint64_t x) {  // splitmix64
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t Fnv(std::string_view a, std::string_view b) {
  uint64_t h = 1469598103934665603ULL;
  for (std::string_view s : {a, std::string_view("|"), b}) {
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  }
  return h;
}

// What the generator made of one expected key.
struct Fate {
  const char* state;   // nullptr: no row (never planned)
  const char* reason;  // skip reason or nullptr
  const char* cause;   // the gap cause (or waiver); nullptr: not a gap
  bool waived;
};

Fate FateOf(int job, int partition, int day) {
  // Whole stretches never planned: a day of one job, ten days of one
  // partition of another.
  if ((job == 42 && day == 17) || (job == 77 && partition == 13 && day >= 60 && day < 70)) {
    return {nullptr, nullptr, "never_planned", false};
  }
  const uint64_t h = Mix((uint64_t(job) << 32) | (uint64_t(partition) << 16) | uint64_t(day));
  switch (h % 1000) {
    case 0:
    case 1: return {nullptr, nullptr, "never_planned", false};
    case 2: return {"skipped", "misfired", "misfired", false};
    case 3: return {"failed", nullptr, "failed", false};
    case 4: return {"unknown", nullptr, "unknown", false};
    case 5: return {"awaiting_approval", nullptr, "awaiting_approval", false};
    case 6: return {"pending", nullptr, "stuck", false};
    case 7: return {"skipped", "coalesced", "coalesced", true};
    case 8: return {"skipped", "catchup_none", "catchup_none", true};
    case 9: return {"skipped", "overlap", "overlap", true};
    case 10: return {"skipped", "paused", "paused", true};
    case 11: return {"cancelled", nullptr, "cancelled", true};
    default: return {"succeeded", nullptr, nullptr, false};
  }
}

// The answer a scan must give: gaps by cause and a checksum of their keys.
struct Answer {
  std::map<std::string, int64_t> by_cause;
  uint64_t checksum = 0;
  int64_t keys = 0;  // expected keys seen (generator only)

  void Add(std::string_view run_key, std::string_view cause) {
    ++by_cause[std::string(cause)];
    checksum += Fnv(run_key, cause);
  }
  int64_t Total() const {
    int64_t n = 0;
    for (const auto& [_, c] : by_cause) n += c;
    return n;
  }
  std::string ToString() const {
    std::string s = fmt::format("{} gaps, checksum {:016x}:", Total(), checksum);
    for (const auto& [c, n] : by_cause) s += fmt::format(" {}={}", c, n);
    return s;
  }
  bool operator==(const Answer& o) const {
    return by_cause == o.by_cause && checksum == o.checksum;
  }
};

std::string ConfigText() {
  static const char* const kZones[] = {"UTC", "Asia/Seoul", "America/New_York",
                                       "Europe/Berlin"};
  std::string t = "[server]\nlisten = \"127.0.0.1:0\"\nstore = \"sqlite:ledger.db\"\n";
  for (int j = 0; j < kJobs; ++j) {
    t += fmt::format("\n[[job]]\nname = \"job{:03d}\"\nschedule = \"{} {} * * *\"\n", j,
                     (j * 7) % 60, j % 24);
    t += fmt::format("timezone = \"{}\"\npartitions = [", kZones[j % 4]);
    for (int p = 0; p < kPartitions; ++p) t += fmt::format("{}\"part{:03d}\"", p ? ", " : "", p);
    t += "]\n\n  [[job.step]]\n  name = \"work\"\n  command = [\"/bin/true\"]\n";
  }
  return t;
}

config::Config LoadBenchConfig() {
  auto loaded = config::LoadConfig(ConfigPath());
  if (!std::holds_alternative<config::Config>(loaded)) Die("the generated config does not load");
  return std::get<config::Config>(std::move(loaded));
}

// Walks every expected key of the window in the generator's order, calling
// fn(job index, partition index, day index, job, occurrence, period, date).
template <typename Fn>
void ForEachGeneratedKey(const config::Config& config, Fn&& fn) {
  const auto from = kFromDate;
  const auto to = kToDate;
  for (int j = 0; j < kJobs; ++j) {
    const auto& job = config.jobs[j];
    const Schedule schedule =
        Check(Schedule::Create(job.schedule, job.timezone, job.ScheduleOptionsFor()), "schedule");
    const PeriodKey key = job.EffectiveKey(schedule);
    int day = 0;
    for (const auto& occ : schedule.Between(sys_days(from) - days{2}, sys_days(to) + days{2})) {
      const auto date = schedule.BusinessDate(occ);
      if (sys_days(date) < sys_days(from) || sys_days(date) > sys_days(to)) continue;
      const std::string period = schedule.Period(occ, key);
      const std::string date_text = FormatDate(date);
      for (int p = 0; p < kPartitions; ++p) fn(j, p, day, job, occ, period, date_text);
      ++day;
    }
    if (day != 100) Die(fmt::format("{} has {} business dates in the window", job.name, day));
  }
}

Answer ExpectedAnswer(const config::Config& config, bool include_waived) {
  Answer a;
  ForEachGeneratedKey(config, [&](int j, int p, int d, const config::JobConfig& job,
                                  const Occurrence&, const std::string& period,
                                  const std::string&) {
    ++a.keys;
    const Fate f = FateOf(j, p, d);
    if (!f.cause || (f.waived && !include_waived)) return;
    a.Add(job.name + "/" + job.partitions[p] + "/" + period, f.cause);
  });
  return a;
}

void Exec(sqlite3* db, const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    const std::string msg = err ? err : "?";
    sqlite3_free(err);
    Die(fmt::format("{}: {}", sql, msg));
  }
}

void BuildLedger() {
  const auto t0 = RealClock().Now();
  fs::remove_all(kDir);
  fs::create_directories(kDir);
  std::ofstream(ConfigPath()) << ConfigText();
  const config::Config config = LoadBenchConfig();
  // Jobs and partitions through the store, from before the window.
  const sys_seconds created = At("2026-07-01T00:00:00Z");
  {
    store::SqliteOptions o;
    o.path = DbPath();
    o.synchronous_full = false;
    auto store = Check(store::SqliteStore::Open(o), "opening the store");
    for (const auto& job : config.jobs) {
      const auto at = store::ToInstant(Clock::TimePoint{created.time_since_epoch()});
      Check(store->JobSync({job.name, engine::CanonicalDefinition(job), at}), "JobSync");
      Check(store->PartitionSync({job.name, job.partitions, at}), "PartitionSync");
    }
  }
  // The runs: plain INSERTs in one transaction.
  sqlite3* db = nullptr;
  if (sqlite3_open(DbPath().c_str(), &db) != SQLITE_OK) Die("opening the ledger for seeding");
  Exec(db, "PRAGMA synchronous = OFF");
  Exec(db, "BEGIN IMMEDIATE");
  sqlite3_stmt* ins = nullptr;
  if (sqlite3_prepare_v2(db,
                         "INSERT INTO runs (job, partition, period, business_date, scheduled_at, "
                         "job_version, state, reason, released, misfire_exempt, attempts, "
                         "created_at, updated_at, finished_at) "
                         "VALUES (?, ?, ?, ?, ?, 1, ?, ?, 1, 0, ?, ?, ?, ?)",
                         -1, &ins, nullptr) != SQLITE_OK) {
    Die(sqlite3_errmsg(db));
  }
  int64_t rows = 0;
  ForEachGeneratedKey(config, [&](int j, int p, int d, const config::JobConfig& job,
                                  const Occurrence& occ, const std::string& period,
                                  const std::string& date) {
    const Fate f = FateOf(j, p, d);
    if (!f.state) return;
    const int64_t at = Ms(occ.utc);
    const bool ran = std::strcmp(f.state, "skipped") != 0 && std::strcmp(f.state, "pending") != 0 &&
                     std::strcmp(f.state, "awaiting_approval") != 0;
    const int64_t end = at + 300000 + (rows % 600) * 1000;
    sqlite3_reset(ins);
    sqlite3_bind_text(ins, 1, job.name.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(ins, 2, job.partitions[p].c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(ins, 3, period.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(ins, 4, date.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(ins, 5, at);
    sqlite3_bind_text(ins, 6, f.state, -1, SQLITE_STATIC);
    if (f.reason) {
      sqlite3_bind_text(ins, 7, f.reason, -1, SQLITE_STATIC);
    } else {
      sqlite3_bind_null(ins, 7);
    }
    sqlite3_bind_int(ins, 8, ran ? 1 : 0);
    sqlite3_bind_int64(ins, 9, at - 86400000);
    sqlite3_bind_int64(ins, 10, ran ? end : at);
    if (ran && std::strcmp(f.state, "unknown") != 0) {
      sqlite3_bind_int64(ins, 11, end);
    } else {
      sqlite3_bind_null(ins, 11);
    }
    if (sqlite3_step(ins) != SQLITE_DONE) Die(sqlite3_errmsg(db));
    ++rows;
  });
  sqlite3_finalize(ins);
  Exec(db, "UPDATE jobs SET planned_through = (SELECT max(scheduled_at) FROM runs)");
  Exec(db, "COMMIT");
  Exec(db, "ANALYZE");
  sqlite3_close(db);
  std::ofstream(KeyPath()) << fmt::format("schema={} generator={}\n",
                                          store::kSqliteSchemaVersion, kGeneratorVersion);
  std::fprintf(stderr, "gaps_bench: built %s: %lld runs in %.1f s, %.0f MB\n", DbPath().c_str(),
               static_cast<long long>(rows), SecondsSince(t0),
               static_cast<double>(fs::file_size(DbPath())) / (1024.0 * 1024.0));
}

void EnsureLedger(bool rebuild) {
  std::string key;
  if (std::ifstream in(KeyPath()); in) std::getline(in, key);
  const std::string want =
      fmt::format("schema={} generator={}", store::kSqliteSchemaVersion, kGeneratorVersion);
  if (rebuild || key != want || !fs::exists(DbPath())) {
    std::fprintf(stderr, "gaps_bench: building the ledger in %s (%s)\n", kDir, want.c_str());
    BuildLedger();
  } else {
    std::fprintf(stderr, "gaps_bench: reusing %s (%s)\n", DbPath().c_str(), key.c_str());
  }
}

double CpuSeconds(const rusage& ru) {
  const auto tv = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return tv(ru.ru_utime) + tv(ru.ru_stime);
}

double SelfCpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return CpuSeconds(ru);
}

int64_t VmHwmKb() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6));
  }
  return -1;
}

// The child: one in-process scan of every job over the window; prints one
// JSON line with its time, peak RSS and answer.
int ScanChild(bool include_waived) {
  const double hwm_start = static_cast<double>(VmHwmKb());
  const auto t0 = RealClock().Now();
  const config::Config config = LoadBenchConfig();
  store::SqliteOptions o;
  o.path = DbPath();
  o.create_if_missing = false;
  auto store = Check(store::SqliteStore::Open(o), "opening the store");
  const double open_s = SecondsSince(t0);
  const double hwm_open = static_cast<double>(VmHwmKb());

  const auto t1 = RealClock().Now();
  const double cpu1 = SelfCpuSeconds();
  engine::GapScanner scanner(*store);
  Answer a;
  std::string run_key;
  for (const auto& job : config.jobs) {
    engine::GapScanParams p;
    p.from = kFromDate;
    p.to = kToDate;
    p.now = store::ToInstant(RealClock().Now());
    p.include_waived = include_waived;
    Check(scanner.Scan(job, p,
                       [&](const engine::Gap& g) {
                         a.Add(g.RunKey(), g.cause);
                         return Status::Ok();
                       }),
          "Scan");
  }
  const double scan_s = SecondsSince(t1);
  const double scan_cpu_s = SelfCpuSeconds() - cpu1;
  nlohmann::json out = {{"open_s", open_s},
                        {"scan_s", scan_s},
                        {"scan_cpu_s", scan_cpu_s},
                        {"hwm_start_kb", hwm_start},
                        {"hwm_open_kb", hwm_open},
                        {"hwm_kb", VmHwmKb()},
                        {"checksum", a.checksum},
                        {"by_cause", a.by_cause}};
  std::printf("%s\n", out.dump().c_str());
  return 0;
}

// `--watch`: the scanner inside `serve` (engine::GapWatch) on a copy of
// the ledger, with every job's backfill.horizon covering the 100 dates, at
// a fake `now` just after the last one: the first full pass (which writes a
// gap_found event per gap and queues the old never-planned and misfired
// keys for approval), an incremental pass a minute later, the next hourly
// full pass (nothing new: the steady state) and the incremental pass after
// it. Prints wall and CPU seconds of each, and the share of one core the
// steady state costs: full / 3600 s + incremental / 60 s.
int WatchChild() {
  const std::string copy = std::string(kDir) + "/watch.db";
  fs::copy_file(DbPath(), copy, fs::copy_options::overwrite_existing);
  config::Config config = LoadBenchConfig();
  // From 2026-08-01 00:00 UTC, the first seeded date, to `start`.
  for (auto& job : config.jobs) {
    job.backfill.horizon = std::chrono::days{100} + std::chrono::hours{1};
  }
  store::SqliteOptions o;
  o.path = copy;
  o.create_if_missing = false;
  auto store = Check(store::SqliteStore::Open(o), "opening the copy");
  engine::GapWatch watch(config, *store);
  const Clock::TimePoint start{
      std::chrono::sys_days(kToDate) + std::chrono::days{1} + std::chrono::hours{1}};
  nlohmann::json passes = nlohmann::json::array();
  const std::pair<const char*, Clock::Duration> kPasses[] = {
      {"first full", std::chrono::seconds{0}},
      {"incremental", std::chrono::seconds{60}},
      {"full, steady", std::chrono::seconds{3600 + 60}},
      {"incremental, steady", std::chrono::seconds{3600 + 120}}};
  for (const auto& [name, offset] : kPasses) {
    const auto t0 = RealClock().Now();
    const double cpu0 = SelfCpuSeconds();
    engine::GapWatchStats stats;
    Check(watch.ScanOnce(start + offset, &stats), name);
    passes.push_back({{"pass", name},
                      {"wall_s", SecondsSince(t0)},
                      {"cpu_s", SelfCpuSeconds() - cpu0},
                      {"new_gaps", stats.new_gaps},
                      {"awaiting_approval", stats.awaiting_approval}});
  }
  store.reset();
  fs::remove(copy);
  fs::remove(copy + "-wal");
  fs::remove(copy + "-shm");
  const double share = passes[2]["cpu_s"].get<double>() / 3600 +
                       passes[3]["cpu_s"].get<double>() / 60;
  std::printf("%s\n", nlohmann::json{{"passes", passes},
                                     {"steady_core_share_percent", share * 100},
                                     {"hwm_kb", VmHwmKb()}}
                          .dump(2)
                          .c_str());
  return 0;
}

struct ChildResult {
  int exit_code = -1;
  double wall_s = 0;
  double cpu_s = 0;  // user + system
  int64_t maxrss_kb = 0;
};

// Runs argv with stdout to `out_path`, timing it from fork to exit.
// ru_maxrss counts the RSS a child had before its exec, i.e. its parent's
// at the fork: the CLI is therefore started through a small fresh process
// of its own (Spawn), not from this one, which grows as it parses outputs.
ChildResult RunChild(const std::vector<std::string>& argv, const std::string& out_path) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const auto t0 = RealClock().Now();
  const pid_t pid = fork();
  if (pid < 0) Die("fork failed");
  if (pid == 0) {
    const int fd = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || dup2(fd, 1) < 0) _exit(127);
    close(fd);
    execv(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  rusage ru{};
  if (wait4(pid, &status, 0, &ru) != pid) Die("wait4 failed");
  ChildResult r;
  r.wall_s = SecondsSince(t0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.maxrss_kb = ru.ru_maxrss;
  r.cpu_s = CpuSeconds(ru);
  return r;
}

// `--spawn OUT -- ARGV...`: runs ARGV as RunChild does, from this fresh
// (small) process, and prints its exit code, wall and CPU time and
// ru_maxrss as one JSON line.
int Spawn(int argc, char** argv, int first) {
  if (first + 2 >= argc || std::string(argv[first + 1]) != "--") Die("--spawn OUT -- ARGV...");
  const std::string out_path = argv[first];
  const std::vector<std::string> child(argv + first + 2, argv + argc);
  const ChildResult r = RunChild(child, out_path);
  std::printf("%s\n", nlohmann::json{{"exit_code", r.exit_code},
                                     {"wall_s", r.wall_s},
                                     {"cpu_s", r.cpu_s},
                                     {"maxrss_kb", r.maxrss_kb}}
                          .dump()
                          .c_str());
  return 0;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void Verify(const char* what, const Answer& got, const Answer& want) {
  if (!(got == want)) {
    Die(fmt::format("{}: wrong answer\n  got  {}\n  want {}", what, got.ToString(),
                    want.ToString()));
  }
}

struct Series {
  std::vector<double> seconds;
  std::vector<double> cpu_seconds;
  std::vector<double> rss_mb;
  void Add(double s, double cpu, double mb) {
    seconds.push_back(s);
    cpu_seconds.push_back(cpu);
    rss_mb.push_back(mb);
  }
};

int Main(int argc, char** argv) {
  int runs = 5;
  bool rebuild = false;
  std::string cli = "build/bench/cronledger";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--scan-child") return ScanChild(false);
    if (a == "--scan-child-waived") return ScanChild(true);
    if (a == "--spawn") return Spawn(argc, argv, i + 1);
    if (a == "--watch") {
      EnsureLedger(false);
      return WatchChild();
    }
    if (a == "--build-only") {  // for bench/api_bench.sh, which serves this ledger
      EnsureLedger(false);
      std::printf("%s\n", kDir);
      return 0;
    }
    if (a == "--runs" && i + 1 < argc) {
      runs = std::stoi(argv[++i]);
    } else if (a == "--cli" && i + 1 < argc) {
      cli = argv[++i];
    } else if (a == "--rebuild") {
      rebuild = true;
    } else {
      Die("usage: gaps_bench [--runs N] [--cli PATH/TO/cronledger] [--rebuild] | --watch | "
          "--build-only");
    }
  }
  cli = fs::absolute(cli).string();
  if (!fs::exists(cli)) Die(cli + " does not exist");
  const std::string self = fs::read_symlink("/proc/self/exe").string();
  std::fprintf(stderr, "gaps_bench: %s; SQLite %s; cli %s\n", bench::kBuildType,
               sqlite3_libversion(), cli.c_str());
  EnsureLedger(rebuild);
  const config::Config config = LoadBenchConfig();
  const Answer want = ExpectedAnswer(config, false);
  const Answer want_waived = ExpectedAnswer(config, true);
  std::fprintf(stderr, "gaps_bench: %lld expected keys; want %s\n",
               static_cast<long long>(want.keys), want.ToString().c_str());
  if (want.keys != 1000000) Die("the generator did not make 1,000,000 keys");

  const std::string out_path = std::string(kDir) + "/out.json";
  const std::string load_before = ReadFile("/proc/loadavg");
  Series inproc, inproc_waived, cli_gaps, cli_waived;
  for (int run = 0; run < runs; ++run) {
    for (bool waived : {false, true}) {
      const auto r = RunChild({self, waived ? "--scan-child-waived" : "--scan-child"}, out_path);
      if (r.exit_code != 0) Die(fmt::format("scan child exited {}", r.exit_code));
      const auto j = nlohmann::json::parse(ReadFile(out_path));
      Answer got;
      got.checksum = j["checksum"].get<uint64_t>();
      got.by_cause = j["by_cause"].get<std::map<std::string, int64_t>>();
      Verify("in-process scan", got, waived ? want_waived : want);
      const double mb = static_cast<double>(j["hwm_kb"].get<int64_t>()) / 1024.0;
      (waived ? inproc_waived : inproc)
          .Add(j["scan_s"].get<double>(), j["scan_cpu_s"].get<double>(), mb);
      std::fprintf(stderr,
                   "run %d in-process%s: scan %.3f s, CPU %.3f s (open %.3f s), VmHWM %.1f MB "
                   "(%.1f MB after open)\n",
                   run + 1, waived ? " --include-waived" : "", j["scan_s"].get<double>(),
                   j["scan_cpu_s"].get<double>(), j["open_s"].get<double>(), mb,
                   j["hwm_open_kb"].get<double>() / 1024.0);
    }
    for (bool waived : {false, true}) {
      const std::string spawn_path = std::string(kDir) + "/spawn.json";
      std::vector<std::string> argv = {self, "--spawn", out_path, "--",    cli, "gaps", "--config",
                                       ConfigPath(), "--from", kFrom, "--to", kTo,  "--json"};
      if (waived) argv.push_back("--include-waived");
      if (RunChild(argv, spawn_path).exit_code != 0) Die("--spawn failed");
      const auto spawned = nlohmann::json::parse(ReadFile(spawn_path));
      ChildResult r;
      r.exit_code = spawned["exit_code"].get<int>();
      r.wall_s = spawned["wall_s"].get<double>();
      r.cpu_s = spawned["cpu_s"].get<double>();
      r.maxrss_kb = spawned["maxrss_kb"].get<int64_t>();
      if (r.exit_code != 1) Die(fmt::format("cronledger gaps exited {}, not 1", r.exit_code));
      const std::string text = ReadFile(out_path);
      const auto j = nlohmann::json::parse(text);
      Answer got;
      for (const auto& g : j["gaps"]) {
        const std::string cause = g["cause"].get<std::string>();
        const bool waived_cause = cause == "coalesced" || cause == "catchup_none" ||
                                  cause == "overlap" || cause == "paused" || cause == "cancelled";
        if (g["waived"].get<bool>() != waived_cause) Die("wrong waived flag: " + g.dump());
        got.Add(g["run_key"].get<std::string>(), cause);
      }
      Verify("cronledger gaps --json", got, waived ? want_waived : want);
      const double mb = static_cast<double>(r.maxrss_kb) / 1024.0;
      (waived ? cli_waived : cli_gaps).Add(r.wall_s, r.cpu_s, mb);
      std::fprintf(stderr, "run %d cli%s: %.3f s, CPU %.3f s, ru_maxrss %.1f MB, output %.1f MB\n",
                   run + 1, waived ? " --include-waived" : "", r.wall_s, r.cpu_s, mb,
                   static_cast<double>(text.size()) / (1024.0 * 1024.0));
    }
  }
  std::printf("load average before: %s", load_before.c_str());
  std::printf("load average after:  %s", ReadFile("/proc/loadavg").c_str());
  std::printf("medians of %d runs (target: under 2 s, peak RSS under 100 MB)\n", runs);
  std::printf("%-42s %10s %10s %12s\n", "scan", "time", "CPU", "peak RSS");
  for (const auto& [name, s] :
       {std::pair<const char*, const Series*>{"GapScanner::Scan, all jobs", &inproc},
        {"GapScanner::Scan, include_waived", &inproc_waived},
        {"cronledger gaps --json", &cli_gaps},
        {"cronledger gaps --json --include-waived", &cli_waived}}) {
    std::printf("%-42s %8.3f s %8.3f s %9.1f MB\n", name, Median(s->seconds),
                Median(s->cpu_seconds), Median(s->rss_mb));
  }
  return 0;
}

}  // namespace
}  // namespace cronledger

int main(int argc, char** argv) { return cronledger::Main(argc, argv); }
