#include "faults/invariant_checker.h"

#include <sqlite3.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>

#include "faults/pg_read.h"

namespace cronledger::faults {
namespace {

// A read-only connection; throws std::runtime_error with SQLite's message.
class ReadOnlyDb {
 public:
  explicit ReadOnlyDb(const std::string& path) {
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
      const std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
      sqlite3_close(db_);
      throw std::runtime_error(path + ": " + why);
    }
    sqlite3_busy_timeout(db_, 10000);
  }
  ~ReadOnlyDb() { sqlite3_close(db_); }
  ReadOnlyDb(const ReadOnlyDb&) = delete;
  ReadOnlyDb& operator=(const ReadOnlyDb&) = delete;

  // Runs `sql` and calls `row` for each result row.
  void Query(const std::string& sql, const std::function<void(sqlite3_stmt*)>& row) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr) != SQLITE_OK) {
      throw std::runtime_error(std::string(sqlite3_errmsg(db_)) + " in: " + sql);
    }
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) row(s);
    sqlite3_finalize(s);
    if (rc != SQLITE_DONE)
      throw std::runtime_error(std::string(sqlite3_errmsg(db_)) + " in: " + sql);
  }

 private:
  sqlite3* db_ = nullptr;
};

std::string Text(sqlite3_stmt* s, int col) {
  const unsigned char* t = sqlite3_column_text(s, col);
  return t ? reinterpret_cast<const char*>(t) : "";
}

using Row = std::vector<std::string>;

// The ledger, read as rows of text: an SQLite file (read-only) or a
// PostgreSQL database (a postgresql:// URL). Throws std::runtime_error.
class LedgerReader {
 public:
  explicit LedgerReader(const std::string& target) {
    if (IsPostgresUrl(target)) {
      pg_ = std::make_unique<PgConnection>(target);
      Query("SELECT 1", [](const Row&) {});  // unreachable: unreadable, at once
    } else {
      sqlite_ = std::make_unique<ReadOnlyDb>(target);
    }
  }

  void Query(const std::string& sql, const std::function<void(const Row&)>& row) {
    if (sqlite_) {
      sqlite_->Query(sql, [&](sqlite3_stmt* s) {
        Row r;
        for (int i = 0; i < sqlite3_column_count(s); ++i) r.push_back(Text(s, i));
        row(r);
      });
      return;
    }
    std::vector<Row> rows;
    std::string error;
    if (!pg_->Query(sql, &rows, &error)) throw std::runtime_error(error + " in: " + sql);
    for (const Row& r : rows) row(r);
  }

 private:
  std::unique_ptr<ReadOnlyDb> sqlite_;
  std::unique_ptr<PgConnection> pg_;
};

constexpr const char* kRunKeySql = "job || '/' || partition || '/' || period";

}  // namespace

std::vector<Violation> CheckInvariants(const CheckInput& input) {
  std::vector<Violation> out;
  // Sink: accepted writes per key in write order.
  std::map<std::string, std::vector<int64_t>> accepted;
  try {
    ReadOnlyDb sink(input.sink_db);
    sink.Query(
        "SELECT key, token FROM writes WHERE accepted = 1 ORDER BY id",
        [&](sqlite3_stmt* s) { accepted[Text(s, 0)].push_back(sqlite3_column_int64(s, 1)); });
  } catch (const std::exception& e) {
    out.push_back({"unreadable", "", std::string("sink: ") + e.what()});
    return out;
  }
  for (const auto& [key, tokens] : accepted) {
    if (tokens.size() > 1) {
      std::string list;
      for (int64_t t : tokens) list += (list.empty() ? "" : ", ") + std::to_string(t);
      out.push_back({"delivered_twice", key,
                     std::to_string(tokens.size()) + " accepted writes, tokens " + list});
    }
    int64_t highest = tokens.front();
    for (std::size_t i = 1; i < tokens.size(); ++i) {
      if (tokens[i] < highest) {
        out.push_back({"stale_write_applied", key,
                       "token " + std::to_string(tokens[i]) + " accepted after token " +
                           std::to_string(highest)});
      }
      highest = std::max(highest, tokens[i]);
    }
  }

  std::map<std::string, std::string> state_of;   // run key -> state
  std::map<std::string, std::string> effect_of;  // effect key -> state
  try {
    LedgerReader ledger(input.ledger_db);
    ledger.Query(std::string("SELECT ") + kRunKeySql + ", state FROM runs ORDER BY id",
                 [&](const Row& r) {
                   if (state_of.count(r[0])) return;  // reported below
                   state_of[r[0]] = r[1];
                 });
    ledger.Query(std::string("SELECT ") + kRunKeySql +
                     ", count(*) FROM runs GROUP BY job, partition, period HAVING count(*) > 1",
                 [&](const Row& r) {
                   out.push_back({"duplicate_run", r[0], r[1] + " runs rows"});
                 });
    ledger.Query(
        std::string("SELECT ") + kRunKeySql +
            ", r.id, r.state, a.number, a.node FROM attempts a JOIN runs r ON "
            "r.id = a.run_id WHERE a.ended_at IS NULL AND r.state <> 'running' "
            "ORDER BY r.id, a.number",
        [&](const Row& r) {
          out.push_back({"attempt_not_closed", r[0],
                         "run " + r[1] + " is " + r[2] + " but its attempt " + r[3] + " (node " +
                             r[4] + ") has no end"});
        });
    if (!input.effects_job.empty()) {
      // Job names are 1-64 of A-Z a-z 0-9 . _ -: nothing to escape.
      ledger.Query("SELECT key, state FROM effects WHERE job = '" + input.effects_job + "'",
                   [&](const Row& r) { effect_of[r[0]] = r[1]; });
    }
  } catch (const std::exception& e) {
    out.push_back({"unreadable", "", std::string("ledger: ") + e.what()});
    return out;
  }

  for (const std::string& key : input.expected_keys) {
    if (input.allowed_unfinished.count(key)) continue;
    const auto it = state_of.find(key);
    if (it == state_of.end()) {
      out.push_back({"missing", key, "no run in the ledger"});
    } else if (it->second != "succeeded") {
      out.push_back({"not_succeeded", key, "the run is " + it->second});
    } else if (input.runs_deliver_run_keys && !accepted.count(key)) {
      out.push_back({"not_delivered", key, "succeeded, but the sink accepted no write"});
    }
  }

  if (!input.expected_deliveries.empty()) {
    const std::set<std::string> expected(input.expected_deliveries.begin(),
                                         input.expected_deliveries.end());
    for (const std::string& key : expected) {
      if (!accepted.count(key)) out.push_back({"undelivered", key, "the sink accepted no write"});
    }
    for (const auto& [key, tokens] : accepted) {
      // A key allowed to be unfinished may have been delivered already.
      if (!expected.count(key) && !input.allowed_unfinished.count(key)) {
        out.push_back({"unexpected_delivery", key,
                       std::to_string(tokens.size()) + " accepted writes for a key not expected"});
      }
    }
    if (!input.effects_job.empty()) {
      for (const std::string& key : expected) {
        const auto it = effect_of.find(key);
        if (it == effect_of.end()) {
          out.push_back({"effect_not_committed", key,
                         "no effect of job " + input.effects_job + " in the ledger"});
        } else if (it->second != "committed") {
          out.push_back({"effect_not_committed", key, "the effect is " + it->second});
        }
      }
    }
  }
  return out;
}

std::string Describe(const std::vector<Violation>& violations) {
  std::string text;
  for (const auto& v : violations) {
    text += v.kind + " " + (v.run_key.empty() ? "-" : v.run_key) + ": " + v.detail + "\n";
  }
  return text;
}

}  // namespace cronledger::faults
