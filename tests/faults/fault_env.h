// Faults of the machine around serve, each behind an RAII guard that undoes
// it on every exit path (docs/faults.md): a small tmpfs for the store (disk
// full, read-only), and a throwaway PostgreSQL server of the test's own
// that the test may restart (never the pg_server fixture's, which other
// tests use at the same time).
#ifndef CRONLEDGER_TESTS_FAULTS_FAULT_ENV_H_
#define CRONLEDGER_TESTS_FAULTS_FAULT_ENV_H_

#include <cstdint>
#include <string>

namespace cronledger::faults {

class Scenario;
class Sql;

// A tmpfs of `size_bytes` mounted on `dir` (created if missing). Needs root
// (CAP_SYS_ADMIN), as CI and the development machines run the tests.
// Unmounted (lazily, so a straggler cannot keep it) on destruction.
class Tmpfs {
 public:
  Tmpfs(std::string dir, int64_t size_bytes);
  ~Tmpfs();
  Tmpfs(const Tmpfs&) = delete;
  Tmpfs& operator=(const Tmpfs&) = delete;

  // Whether the mount succeeded; error() says why not.
  bool mounted() const { return mounted_; }
  const std::string& error() const { return error_; }
  const std::string& dir() const { return dir_; }

  // mount -o remount,ro / remount,rw; 0 or the errno of the refusal
  // (EBUSY: a file on it is open for writing).
  int SetReadOnly(bool read_only);

  // Writes `path` (on the tmpfs) in 64 KiB blocks until the file system
  // is full: the bytes written.
  static int64_t FillUp(const std::string& path);

 private:
  std::string dir_;
  int64_t size_bytes_;
  bool mounted_ = false;
  std::string error_;
};

// A scenario's SQLite ledger on a small tmpfs of its own (the scenario
// folder's `disk/`, its ledger `disk/ledger.db`): the disk-full and
// read-only scenarios. Construct before serve first starts.
class LedgerDisk {
 public:
  LedgerDisk(Scenario& sc, int64_t size_bytes);

  // Whether the tmpfs is mounted; error() says why not.
  bool mounted() const { return tmpfs_.mounted(); }
  const std::string& error() const { return tmpfs_.error(); }
  const std::string& dir() const { return tmpfs_.dir(); }

  // Fills the file system up with a file of the test's, after the WAL was
  // checkpointed and truncated through `ledger` (bounded wait), so that
  // serve's next write must take space: the bytes written, 0 when the WAL
  // could not be truncated.
  int64_t Fill(Sql& ledger);
  // Removes the file Fill() wrote: the space is back.
  void Free();

  // remount,ro as soon as no process holds a file there open for writing
  // (bounded wait, reaping zombies: a supervisor serve forked for a step
  // holds serve's files until its parent-death signal lands): 0, or the
  // errno of the last refusal.
  int MakeReadOnly();
  // remount,ro or rw once: 0 or the errno (EBUSY under a running serve).
  int SetReadOnly(bool read_only) { return tmpfs_.SetReadOnly(read_only); }

 private:
  Tmpfs tmpfs_;
};

// A PostgreSQL server of the test's own (scripts/pg-server.sh, given as
// PG_SERVER_SCRIPT) in a state folder of its own, on a free port; stopped
// and its data removed on destruction.
class OwnPostgres {
 public:
  // `durable`: the stock settings (fsync, synchronous_commit on), so that a
  // crash (`restart -m immediate`) loses no committed transaction; without
  // it pg-server.sh turns synchronous_commit off, and a crash forgets the
  // last few hundred milliseconds of commits — a fault of the test's server,
  // not of cronledger.
  explicit OwnPostgres(std::string state_dir, bool durable = true);
  ~OwnPostgres();
  OwnPostgres(const OwnPostgres&) = delete;
  OwnPostgres& operator=(const OwnPostgres&) = delete;

  // "" when it did not start; error() says why.
  const std::string& url() const { return url_; }
  const std::string& error() const { return error_; }

  // pg_ctl restart -w, mode "fast" (clients are disconnected, their
  // transactions rolled back) or "immediate" (no shutdown checkpoint: a
  // crash and its recovery). false, with error(), when it did not come back.
  bool Restart(const std::string& mode);

 private:
  std::string state_dir_;
  std::string data_dir_;
  std::string url_;
  std::string error_;
};

}  // namespace cronledger::faults

#endif  // CRONLEDGER_TESTS_FAULTS_FAULT_ENV_H_
