#include "faults/scenario.h"

#include <dirent.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include "cli/subprocess.h"
#include "store/pg_test_server.h"

namespace cronledger::faults {

using Json = nlohmann::json;
using testing::Cronledger;

// ---------------------------------------------------------------------------
// Files.

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

bool Exists(const std::string& path) { return std::filesystem::exists(path); }

pid_t ReadPid(const std::string& path) {
  const std::string text = ReadFile(path);
  return text.empty() ? 0 : static_cast<pid_t>(std::strtol(text.c_str(), nullptr, 10));
}

TempDir::TempDir() {
  std::string pattern =
      (std::filesystem::temp_directory_path() / "cronledger-faults-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
  std::filesystem::create_directory(path_ + "/pids");
}

TempDir::~TempDir() {
  if (const char* keep = std::getenv("CRONLEDGER_FAULT_KEEP"); keep != nullptr && *keep != '\0') {
    std::cerr << "[ kept     ] " << path_ << "\n";
    return;
  }
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string TempDir::Write(const std::string& name, const std::string& text) const {
  std::ofstream(File(name)) << text;
  return File(name);
}

std::string TempDir::WriteScript(const std::string& name, const std::string& text) const {
  Write(name, text);
  std::filesystem::permissions(File(name), std::filesystem::perms::owner_all);
  return File(name);
}

// ---------------------------------------------------------------------------
// Processes.

std::optional<ProcStat> StatOf(pid_t pid) {
  const std::string text = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  const auto close = text.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(text.substr(close + 1));
  ProcStat st;
  if (!(rest >> st.state >> st.ppid >> st.pgrp)) return std::nullopt;
  return st;
}

bool Alive(pid_t pid) {
  const auto st = StatOf(pid);
  return st && st->state != 'Z' && st->state != 'X';
}

std::vector<pid_t> AllPids() {
  std::vector<pid_t> pids;
  DIR* d = opendir("/proc");
  if (d == nullptr) return pids;
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (end != e->d_name && *end == '\0') pids.push_back(static_cast<pid_t>(pid));
  }
  closedir(d);
  return pids;
}

std::vector<pid_t> LiveGroupMembers(pid_t pgid) {
  std::vector<pid_t> live;
  for (pid_t p : AllPids()) {
    const auto st = StatOf(p);
    if (st && st->pgrp == pgid && st->state != 'Z' && st->state != 'X') live.push_back(p);
  }
  return live;
}

std::string CommandLineOf(pid_t pid) {
  std::string text = ReadFile("/proc/" + std::to_string(pid) + "/cmdline");
  for (char& c : text) c = c == '\0' ? ' ' : c;
  return text;
}

void ReapZombies() {
  for (pid_t p : AllPids()) {
    const auto st = StatOf(p);
    if (st && st->ppid == getpid() && st->state == 'Z') {
      waitpid(p, nullptr, WNOHANG);
    }
  }
}

std::string RecordStepGroupShell() {
  // Field 5 of /proc/PID/stat is the process group; the command name in
  // field 2 is the script's, without spaces.
  return "read -r _ _ _ _ G _ < /proc/$$/stat\n"
         "echo \"$G\" > \"$D/pids/$CRONLEDGER_RUN_ID.$CRONLEDGER_ATTEMPT.pid\"\n";
}

ProcessSweeper::ProcessSweeper(std::string pid_dir) : pid_dir_(std::move(pid_dir)) {
  prctl(PR_SET_CHILD_SUBREAPER, 1);
}

ProcessSweeper::~ProcessSweeper() {
  std::error_code ec;
  for (const auto& f : std::filesystem::directory_iterator(pid_dir_, ec)) {
    const pid_t pgid = ReadPid(f.path().string());
    if (pgid > 1) {
      kill(-pgid, SIGKILL);  // the step's group, led by serve's supervisor shim
      kill(-pgid, SIGCONT);
    }
  }
  // Serve processes are gone by now (their guards were built later), so
  // every child left is an orphan of ours.
  for (int round = 0; round < 3; ++round) {
    for (pid_t p : AllPids()) {
      const auto st = StatOf(p);
      if (st && st->ppid == getpid()) {
        kill(p, SIGKILL);
        waitpid(p, nullptr, 0);
      }
    }
  }
}

std::string Tail(const std::string& text, std::size_t lines) {
  std::size_t at = text.size();
  for (std::size_t n = 0; n <= lines && at != std::string::npos && at > 0; ++n) {
    at = text.rfind('\n', at - 1);
  }
  return "...\n" + (at == std::string::npos ? text : text.substr(at + 1));
}

std::vector<std::string> PartitionNames(int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) {
    char name[16];
    snprintf(name, sizeof name, "p%03d", i);
    out.push_back(name);
  }
  return out;
}

std::string TomlArray(const std::vector<std::string>& items) {
  std::string text = "[";
  for (std::size_t i = 0; i < items.size(); ++i) {
    text += std::string(i ? ", " : "") + "\"" + items[i] + "\"";
  }
  return text + "]";
}

std::vector<std::string> ServeEnv(std::vector<std::string> extra) {
  bool asan = false;
  for (auto& e : extra) {
    if (e.rfind("ASAN_OPTIONS=", 0) == 0) {
      e += ":quarantine_size_mb=16";
      asan = true;
    }
  }
  if (!asan) extra.push_back("ASAN_OPTIONS=quarantine_size_mb=16");
  return extra;
}

// ---------------------------------------------------------------------------
// Sql.

Sql::Sql(std::string path) : path_(std::move(path)) {
  if (IsPostgresUrl(path_)) pg_ = std::make_unique<PgConnection>(path_);
}
Sql::~Sql() { sqlite3_close(db_); }

std::vector<std::vector<std::string>> Sql::Rows(const std::string& sql) {
  std::vector<std::vector<std::string>> rows;
  if (pg_) {
    std::string error;
    if (!pg_->Query(sql, &rows, &error)) rows.clear();
    return rows;
  }
  sqlite3_stmt* s = nullptr;
  if (!Open() || sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr) != SQLITE_OK) {
    return rows;
  }
  while (sqlite3_step(s) == SQLITE_ROW) {
    std::vector<std::string> row;
    for (int i = 0; i < sqlite3_column_count(s); ++i) {
      const unsigned char* t = sqlite3_column_text(s, i);
      row.push_back(t ? reinterpret_cast<const char*>(t) : "");
    }
    rows.push_back(std::move(row));
  }
  sqlite3_finalize(s);
  return rows;
}

int64_t Sql::Int(const std::string& sql) {
  const auto rows = Rows(sql);
  return rows.empty() || rows[0].empty() || rows[0][0].empty() ? -1 : std::stoll(rows[0][0]);
}

std::string Sql::Text(const std::string& sql) {
  const auto rows = Rows(sql);
  return rows.empty() || rows[0].empty() ? "" : rows[0][0];
}

bool Sql::Exec(const std::string& sql, std::string* error) {
  std::string why;
  if (pg_) {
    std::vector<std::vector<std::string>> rows;
    const bool ok = pg_->Query(sql, &rows, &why);
    if (!ok && error != nullptr) *error = why;
    return ok;
  }
  if (!Open()) {
    if (error != nullptr) *error = "cannot open " + path_;
    return false;
  }
  char* message = nullptr;
  const bool ok = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &message) == SQLITE_OK;
  if (!ok && error != nullptr) *error = message ? message : "error";
  sqlite3_free(message);
  return ok;
}

bool Sql::WriteLockFree(int busy_ms) {
  if (!Open()) return false;
  sqlite3_busy_timeout(db_, busy_ms);
  const bool free = sqlite3_exec(db_, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) == SQLITE_OK;
  if (free) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_busy_timeout(db_, 5000);
  return free;
}

bool Sql::Open() {
  if (db_ != nullptr) return true;
  if (!Exists(path_)) return false;  // never create it
  if (sqlite3_open_v2(path_.c_str(), &db_, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
    sqlite3_close(db_);
    db_ = nullptr;
    return false;
  }
  sqlite3_busy_timeout(db_, 5000);
  return true;
}

// ---------------------------------------------------------------------------
// Scenario.

Scenario::Scenario(Backend backend) : sweeper_(dir_.File("pids")) {
  const auto init = testing::RunProcess({FENCED_SINK_BIN, "--db", SinkDb(), "--init"});
  if (init.exit_code != 0) throw std::runtime_error("fenced_sink --init: " + init.err);
  if (backend == Backend::kPostgres) {
    const std::string server = testing::TestPostgresUrl();
    if (server.empty()) {
      throw std::runtime_error(
          "no PostgreSQL test server: run the tests through ctest (its pg_server fixture starts "
          "one) or set CRONLEDGER_TEST_PG_URL");
    }
    static int counter = 0;
    const std::string schema =
        "fault_" + std::to_string(getpid()) + "_" + std::to_string(counter++);
    std::string error;
    if (!Sql(server).Exec("CREATE SCHEMA " + schema, &error)) {
      throw std::runtime_error("CREATE SCHEMA " + schema + ": " + error);
    }
    schema_ = schema;
  }
}

Scenario::~Scenario() {
  const char* keep = std::getenv("CRONLEDGER_FAULT_KEEP");
  if (schema_.empty()) return;
  if (keep != nullptr && *keep != '\0') {
    std::cerr << "[ kept     ] schema " << schema_ << " (" << LedgerDb() << ")\n";
    return;
  }
  Sql(testing::TestPostgresUrl()).Exec("DROP SCHEMA " + schema_ + " CASCADE");
}

std::string Scenario::LedgerDb() const {
  return schema_.empty() ? dir_.File(ledger_file_) : testing::TestPostgresSchemaUrl(schema_);
}

std::string Scenario::StoreUrl(const std::string& params) const {
  if (schema_.empty()) return "sqlite:" + ledger_file_;
  return LedgerDb() + (params.empty() ? "" : "&" + params);
}

void Scenario::WriteConfig(const JobSpec& job, const std::string& file,
                           const std::string& store) const {
  std::string text =
      "[server]\nlisten = \"127.0.0.1:0\"\nstore = \"" + (store.empty() ? StoreUrl() : store) +
      "\"\nmax_workers = " + std::to_string(job.max_workers) + "\ndrain_timeout = \"" +
      job.drain_timeout + "\"\n" + job.server_extra + "\n[[job]]\nname = \"" + job.name +
      "\"\nschedule = \"" +
      job.schedule + "\"\ntimezone = \"UTC\"\ncatchup = \"" + job.catchup + "\"\n" + job.job_extra;
  if (!job.misfire_grace.empty()) text += "misfire_grace = \"" + job.misfire_grace + "\"\n";
  if (!job.executor.empty()) text += "executor = \"" + job.executor + "\"\n";
  if (!job.key.empty()) text += "key = \"" + job.key + "\"\n";
  if (!job.partitions.empty()) text += "partitions = " + job.partitions + "\n";
  if (!job.lease_ttl.empty()) text += "lease_ttl = \"" + job.lease_ttl + "\"\n";
  if (!job.env.empty()) text += "env = " + job.env + "\n";
  text += "retry = { max_attempts = " + std::to_string(job.max_attempts) +
          ", initial_backoff = \"0s\", max_backoff = \"0s\", jitter = 0 }\n\n"
          "  [[job.step]]\n  name = \"deliver\"\n  command = " +
          job.command + "\n  timeout = \"" + job.timeout + "\"\n  idempotent = true\n";
  dir_.Write(file, text);
}

void Scenario::WriteStep(const std::string& first_attempt_body) const {
  const std::string d = dir_.path();
  std::string text = "#!/bin/sh\nD='" + d + "'\n" + RecordStepGroupShell();
  if (!first_attempt_body.empty()) {
    text +=
        "if mkdir \"$D/slow.lock\" 2>/dev/null; then\n"
        "  echo \"$CRONLEDGER_RUN_ID\" > \"$D/slow.run.tmp\" && mv \"$D/slow.run.tmp\" "
        "\"$D/slow.run\"\n"
        "  echo \"$G\" > \"$D/slow.pgid.tmp\" && mv \"$D/slow.pgid.tmp\" \"$D/slow.pgid\"\n"
        "  echo $$ > \"$D/slow.pid.tmp\" && mv \"$D/slow.pid.tmp\" \"$D/slow.pid\"\n" +
        first_attempt_body + "\nfi\n";
  }
  text += std::string("exec '") + FENCED_SINK_BIN +
          "' --db \"$D/sink.db\" --key \"$1\" --token \"$CRONLEDGER_FENCING_TOKEN\" "
          "--note \"run $CRONLEDGER_RUN_ID attempt $CRONLEDGER_ATTEMPT\"\n";
  dir_.WriteScript("step.sh", text);
}

void Scenario::WriteEffectStep(const std::string& hold) const {
  const std::string d = dir_.path();
  const std::string sink = "'" + std::string(FENCED_SINK_BIN) + "'";
  const std::string sleep = hold.empty() ? "" : "sleep " + hold + "\n";
  dir_.WriteScript("step.sh", "#!/bin/sh\nD='" + d + "'\n" + RecordStepGroupShell() + sleep + "exec '" +
                                  CRONLEDGER_BIN +
                                  "' effect run --key \"$1\" --reconcile \"$D/reconcile.sh\" -- " +
                                  sink +
                                  " --db \"$D/sink.db\" --key \"$1\" --token "
                                  "\"$CRONLEDGER_FENCING_TOKEN\" --note \"run $CRONLEDGER_RUN_ID "
                                  "attempt $CRONLEDGER_ATTEMPT\"\n");
  dir_.WriteScript("reconcile.sh", "#!/bin/sh\nexec " + sink + " --db '" + d +
                                       "/sink.db' --check --key \"$CRONLEDGER_EFFECT_KEY\"\n");
}

void Scenario::WriteCheckedStep() const {
  const std::string d = dir_.path();
  const std::string sink = "'" + std::string(FENCED_SINK_BIN) + "'";
  dir_.WriteScript("step.sh", "#!/bin/sh\nD='" + d + "'\n" + RecordStepGroupShell() + sink +
                                  " --db \"$D/sink.db\" --check --key \"$1\" >/dev/null\n"
                                  "c=$?\n[ $c = 0 ] && exit 0\n[ $c = 1 ] || exit 75\nexec " +
                                  sink +
                                  " --db \"$D/sink.db\" --key \"$1\" --token "
                                  "\"$CRONLEDGER_FENCING_TOKEN\" --note \"run $CRONLEDGER_RUN_ID "
                                  "attempt $CRONLEDGER_ATTEMPT\"\n");
}

std::vector<std::string> Scenario::LostSecondKeys(const std::string& job,
                                                  const std::vector<std::string>& partitions,
                                                  int64_t from_ms, int64_t to_ms) const {
  Sql ledger(LedgerDb());
  std::set<std::pair<std::string, int64_t>> have;
  for (const auto& r : ledger.Rows("SELECT partition, scheduled_at FROM runs WHERE job = '" + job +
                                   "' AND scheduled_at BETWEEN " + std::to_string(from_ms) +
                                   " AND " + std::to_string(to_ms))) {
    have.insert({r[0], std::stoll(r[1])});
  }
  std::vector<std::string> lost;
  for (int64_t at = from_ms; at <= to_ms; at += 1000) {
    for (const auto& p : partitions) {
      if (!have.count({p, at})) lost.push_back(job + "/" + p + " at " + std::to_string(at));
    }
  }
  return lost;
}

std::vector<Violation> Scenario::CheckClaimed(const std::string& effects_job, int64_t cutoff_ms,
                                              const std::vector<std::string>& also_expected,
                                              bool effects) const {
  Sql ledger(LedgerDb());
  CheckInput in;
  if (effects) in.effects_job = effects_job;
  std::set<std::string> seen;
  for (const auto& r :
       ledger.Rows("SELECT job || '/' || partition || '/' || period, state, scheduled_at "
                   "FROM runs WHERE attempts > 0" +
                   (effects_job.empty() ? "" : " AND job = '" + effects_job + "'"))) {
    in.expected_keys.push_back(r[0]);
    seen.insert(r[0]);
    if (r[1] == "pending" && std::stoll(r[2]) > cutoff_ms) {
      in.allowed_unfinished.insert(r[0]);
    } else {
      in.expected_deliveries.push_back(r[0]);
    }
  }
  for (const auto& k : also_expected) {
    if (!seen.count(k)) in.expected_keys.push_back(k);
  }
  return CheckWith(std::move(in));
}

std::vector<Violation> Scenario::CheckNow() const { return CheckWith(CheckInput{}); }

Json Scenario::Run(int64_t id) const {
  const auto r = Cronledger({"runs", "--config", Config(), "--run", std::to_string(id), "--json"});
  if (r.exit_code != 0) return Json();
  return Json::parse(r.out, nullptr, false);
}

Json Scenario::Events(int64_t id) const {
  const auto r = Cronledger(
      {"events", "--config", Config(), "--run", std::to_string(id), "--limit", "1000", "--json"});
  if (r.exit_code != 0) return Json::array();
  const Json j = Json::parse(r.out, nullptr, false);
  return j.is_object() && j.contains("events") ? j["events"] : Json::array();
}

std::string Scenario::StateOf(int64_t run_id) const {
  Sql ledger(LedgerDb());
  return ledger.Text("SELECT state FROM runs WHERE id = " + std::to_string(run_id));
}

std::vector<pid_t> Scenario::LiveSteps() const {
  std::set<pid_t> groups;
  std::error_code ec;
  for (const auto& f : std::filesystem::directory_iterator(dir_.File("pids"), ec)) {
    const pid_t pgid = ReadPid(f.path().string());
    if (pgid > 1) groups.insert(pgid);
  }
  // One pass over /proc, however many steps a scenario ran.
  std::vector<pid_t> live;
  for (pid_t p : AllPids()) {
    const auto st = StatOf(p);
    if (st && groups.count(st->pgrp) && st->state != 'Z' && st->state != 'X') live.push_back(p);
  }
  return live;
}

std::vector<Violation> Scenario::Check(const std::vector<std::string>& expected,
                                       std::set<std::string> allowed) const {
  CheckInput in;
  in.expected_keys = expected;
  in.allowed_unfinished = std::move(allowed);
  return CheckWith(std::move(in));
}

std::vector<Violation> Scenario::CheckWith(CheckInput input) const {
  input.ledger_db = LedgerDb();
  input.sink_db = SinkDb();
  return CheckInvariants(input);
}

// ---------------------------------------------------------------------------
// serve nodes.

std::unique_ptr<testing::ServeProcess> ServeNodes::Start(const std::string& node,
                                                         const std::string& config,
                                                         const std::vector<std::string>& env) {
  const int n = ++starts_[node];
  return std::make_unique<testing::ServeProcess>(
      config.empty() ? sc_.Config() : config,
      sc_.dir().File(node + "-" + std::to_string(n) + ".log"),
      std::vector<std::string>{"--node-id", node}, ServeEnv(env));
}

std::vector<int> StopAll(const std::vector<testing::ServeProcess*>& nodes, int tries) {
  for (testing::ServeProcess* p : nodes) p->Signal(SIGTERM);
  std::vector<int> codes;
  for (testing::ServeProcess* p : nodes) {
    testing::WaitFor([&] { return !p->Running(); }, tries);
    codes.push_back(p->Stop());
  }
  return codes;
}

}  // namespace cronledger::faults
