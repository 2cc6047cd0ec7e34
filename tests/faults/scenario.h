// The fault harness's scenario kit (docs/development.md, fault harness): a
// scenario folder with a config, step scripts, the fenced sink and the
// ledger; processes read from /proc; an RAII sweeper that leaves nothing
// running; direct SQLite reads of the ledger and the sink.
//
// Time is read only through polling counts (testing::WaitFor): no clock, no
// wall-clock assertion. The including target defines CRONLEDGER_BIN and
// FENCED_SINK_BIN.
#ifndef CRONLEDGER_TESTS_FAULTS_SCENARIO_H_
#define CRONLEDGER_TESTS_FAULTS_SCENARIO_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/serve_process.h"
#include "faults/invariant_checker.h"
#include "faults/pg_read.h"

struct sqlite3;

namespace cronledger::faults {

// ---------------------------------------------------------------------------
// Files.

std::string ReadFile(const std::string& path);
bool Exists(const std::string& path);
// The integer at the start of a file (a pid, a run id); 0 when none.
pid_t ReadPid(const std::string& path);

// A fresh folder under the temp directory with a `pids/` subfolder, removed
// with everything in it on destruction, unless CRONLEDGER_FAULT_KEEP is set
// (to look at a failed scenario's logs and databases; the path is printed).
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }
  std::string Write(const std::string& name, const std::string& text) const;
  // Writes `text` and makes it executable by its owner.
  std::string WriteScript(const std::string& name, const std::string& text) const;

 private:
  std::string path_;
};

// ---------------------------------------------------------------------------
// Processes.

// /proc/PID/stat: state, parent and process group; nullopt when gone.
struct ProcStat {
  char state = '?';
  pid_t ppid = 0;
  pid_t pgrp = 0;
};
std::optional<ProcStat> StatOf(pid_t pid);

// Alive: exists and is neither a zombie nor dead.
bool Alive(pid_t pid);

std::vector<pid_t> AllPids();

// Live members of process group `pgid`.
std::vector<pid_t> LiveGroupMembers(pid_t pgid);

// /proc/PID/cmdline, NUL separators turned into spaces; "" when gone.
std::string CommandLineOf(pid_t pid);

// Reaps the zombies among this process's children (orphaned steps that were
// reparented here). Serve processes are reaped by their guards, not here:
// call it only while no serve has exited unreaped.
void ReapZombies();

// Shell lines for a step script: record the step's process group under
// DIR/pids/ (one file per run and attempt). A subprocess step runs under
// serve's supervisor shim, which leads the group; the script's own $$ is
// the command inside it, not the group. Expects D='<scenario folder>'.
std::string RecordStepGroupShell();

// Construct first, destroy last: makes this process a child subreaper (a
// step orphaned by a killed serve is reparented here, not to init), and on
// destruction SIGKILLs every step group recorded under DIR/pids and every
// remaining child, then reaps them. Nothing a scenario started outlives it.
class ProcessSweeper {
 public:
  explicit ProcessSweeper(std::string pid_dir);
  ~ProcessSweeper();
  ProcessSweeper(const ProcessSweeper&) = delete;
  ProcessSweeper& operator=(const ProcessSweeper&) = delete;

 private:
  std::string pid_dir_;
};

// ---------------------------------------------------------------------------
// The ledger and the sink, read directly.

// An SQLite file, or a PostgreSQL database when `path` is a postgresql://
// URL (a PostgreSQL scenario's ledger: Scenario::LedgerDb()).
class Sql {
 public:
  // Opened on first use: the file may not exist yet (serve creates it).
  explicit Sql(std::string path);
  ~Sql();
  Sql(const Sql&) = delete;
  Sql& operator=(const Sql&) = delete;

  // Rows of text values (NULL as ""); empty on any error.
  std::vector<std::vector<std::string>> Rows(const std::string& sql);
  // The first column of the first row as an integer; -1 when none.
  int64_t Int(const std::string& sql);
  // The first column of the first row; "" when none.
  std::string Text(const std::string& sql);
  // Runs `sql` (PostgreSQL: several statements allowed); false on error,
  // with the message in *error when given.
  bool Exec(const std::string& sql, std::string* error = nullptr);
  // SQLite: true when nobody holds the write lock: a BEGIN IMMEDIATE
  // succeeds within `busy_ms` (and is rolled back).
  bool WriteLockFree(int busy_ms);

 private:
  bool Open();

  std::string path_;
  sqlite3* db_ = nullptr;
  std::unique_ptr<PgConnection> pg_;  // for a postgresql:// URL
};

// The last `lines` lines of a log, for failure messages.
std::string Tail(const std::string& text, std::size_t lines = 40);

// `n` partition names p000, p001, ...; and the same as a TOML array.
std::vector<std::string> PartitionNames(int n);
std::string TomlArray(const std::vector<std::string>& items);

// serve's environment in the fault scenarios: a small ASan quarantine, so
// that forking a supervisor for each of the many steps stays cheap (a
// fork copies the mappings of the whole heap).
std::vector<std::string> ServeEnv(std::vector<std::string> extra = {});

// ---------------------------------------------------------------------------
// A scenario's folder: config, step scripts, sink, ledger.

// One every-second job (runs are due at once) with one idempotent step
// named `deliver`; retries come at once.
struct JobSpec {
  std::string name;
  std::string schedule = "* * * * * *";
  std::string partitions;  // TOML array, or empty for the default partition
  std::string lease_ttl;   // empty: the default
  std::string timeout;
  std::string drain_timeout = "5s";
  int max_workers = 4;
  // The step's argv, a TOML array; relative programs resolve against the
  // scenario folder.
  std::string command = R"(["./step.sh", "{run_key}"])";
  std::string key = "";  // "date" or "slot"; empty: the default for the schedule
  int max_attempts = 5;
  std::string env = "";  // TOML inline table for job.env; empty: none
  std::string misfire_grace = "";  // empty: the default
  std::string executor = "";       // empty: the default (subprocess)
  std::string server_extra = "";   // TOML lines added to [server]
  std::string catchup = "all";     // all | latest | none
  std::string job_extra = "";      // TOML lines added to the [[job]] table
};

enum class Backend { kSqlite, kPostgres };

// With Backend::kPostgres the ledger is a schema of its own in the test
// server (tests/store/pg_test_server.h; ctest's pg_server fixture), created
// here and dropped on destruction (kept with CRONLEDGER_FAULT_KEEP).
class Scenario {
 public:
  explicit Scenario(Backend backend = Backend::kSqlite);
  ~Scenario();
  Scenario(const Scenario&) = delete;
  Scenario& operator=(const Scenario&) = delete;

  const TempDir& dir() const { return dir_; }
  std::string Config() const { return dir_.File("cronledger.toml"); }
  // The SQLite file, or the PostgreSQL schema's URL: what Sql and the
  // checker read.
  std::string LedgerDb() const;
  std::string SinkDb() const { return dir_.File("sink.db"); }
  bool postgres() const { return !schema_.empty(); }
  const std::string& schema() const { return schema_; }
  // The config's store: "sqlite:ledger.db", or the schema's URL with
  // `params` (e.g. "application_name=node-a") added to its query.
  std::string StoreUrl(const std::string& params = "") const;
  // SQLite: keep the ledger at `relative` (to the folder) instead of
  // ledger.db, e.g. on a file system of its own ("disk/ledger.db").
  void UseLedgerFile(const std::string& relative) { ledger_file_ = relative; }

  // Writes cronledger.toml (or `file`) for `job`, with `store` (default:
  // StoreUrl()).
  void WriteConfig(const JobSpec& job, const std::string& file = "cronledger.toml",
                   const std::string& store = "") const;

  // Writes step.sh: records its process group under pids/, runs
  // `first_attempt_body` in the first step process ever started (an atomic
  // mkdir elects it; it finds its own run in slow.run, its pid in slow.pid
  // and its process group in slow.pgid), then delivers {run_key} ($1) to the
  // sink with its fencing token.
  void WriteStep(const std::string& first_attempt_body) const;

  // Writes step.sh and reconcile.sh: the step delivers its first argument
  // (the run key) through `cronledger effect run --key KEY --reconcile
  // reconcile.sh -- fenced_sink ...`, so that it is delivered exactly once
  // whatever happens to serve (the reconcile program asks the sink).
  // `hold`: seconds (sleep(1) syntax) the step waits before its effect, so
  // that its lease is held long enough to be caught (the SIGSTOP scenario).
  void WriteEffectStep(const std::string& hold = "") const;

  // Writes step.sh: the step asks the sink whether its first argument (the
  // run key) was accepted already and delivers it only if not. Exactly
  // once as long as no two attempts of a run execute at the same time:
  // true across kill -9 of serve (its steps die with it before the lease
  // can be taken back), not across SIGSTOP or a clock jump (the old step
  // lives on), which need WriteEffectStep(). Far cheaper: no `effect run`.
  void WriteCheckedStep() const;

  // The ledger's runs of `job` as (partition, scheduled_at ms) pairs that
  // an every-second schedule over `partitions` should have created between
  // `from_ms` and `to_ms` (both included) and that are absent: lost keys.
  std::vector<std::string> LostSecondKeys(const std::string& job,
                                          const std::vector<std::string>& partitions,
                                          int64_t from_ms, int64_t to_ms) const;

  // The checker over every run of the ledger that was ever claimed (each
  // must have succeeded, its effect under `effects_job` committed and its
  // run key delivered exactly once), except runs scheduled after
  // `cutoff_ms` still pending (a retry queued as serve stopped). Keys of
  // `also_expected` must be in the ledger and succeeded too.
  // `effects` false: the job's steps deliver without `effect run`; an
  // empty `effects_job` (with `effects` false): the runs of every job.
  std::vector<Violation> CheckClaimed(const std::string& effects_job, int64_t cutoff_ms,
                                      const std::vector<std::string>& also_expected = {},
                                      bool effects = true) const;
  // The invariants that hold at any moment, whatever is in flight: no
  // double delivery, no stale write applied, no duplicate run, no open
  // attempt of a run that is not running.
  std::vector<Violation> CheckNow() const;

  // `cronledger runs --run ID --json`; null when it fails.
  nlohmann::json Run(int64_t id) const;
  // `cronledger events --run ID --json`: the run's events.
  nlohmann::json Events(int64_t id) const;
  // The state of one run, read from the ledger; "" when there is none.
  std::string StateOf(int64_t run_id) const;

  // The live members of every step process group recorded so far.
  std::vector<pid_t> LiveSteps() const;

  // The invariant checker over this scenario's ledger and sink, expecting
  // each of `expected` run keys succeeded and delivered under its run key.
  std::vector<Violation> Check(const std::vector<std::string>& expected,
                               std::set<std::string> allowed = {}) const;
  // The same with a checker input of the caller's (ledger and sink filled in).
  std::vector<Violation> CheckWith(CheckInput input) const;

 private:
  TempDir dir_;
  ProcessSweeper sweeper_;  // after dir_: destroyed before the folder goes
  std::string schema_;      // PostgreSQL: the ledger's schema
  std::string ledger_file_ = "ledger.db";
};

// ---------------------------------------------------------------------------
// serve nodes on a scenario.

// Numbered `serve --node-id NODE` processes on the scenario's config (or
// `config`), with ServeEnv(env): NODE's n-th start logs to NODE-n.log in
// the scenario folder, so a restart keeps the earlier logs.
class ServeNodes {
 public:
  explicit ServeNodes(const Scenario& sc) : sc_(sc) {}

  std::unique_ptr<testing::ServeProcess> Start(const std::string& node,
                                               const std::string& config = "",
                                               const std::vector<std::string>& env = {});

 private:
  const Scenario& sc_;
  std::map<std::string, int> starts_;
};

// SIGTERM to every node at once (they drain in parallel; a second SIGTERM
// would make serve exit at once), then their exit codes once all have
// exited: -1 for one still running after `tries` polls of 50 ms and
// ServeProcess::Stop()'s own wait, then killed.
std::vector<int> StopAll(const std::vector<testing::ServeProcess*>& nodes, int tries = 600);

}  // namespace cronledger::faults

#endif  // CRONLEDGER_TESTS_FAULTS_SCENARIO_H_
