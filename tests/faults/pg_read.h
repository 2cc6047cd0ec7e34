// Plain libpq reads for the fault harness: the ledger of a PostgreSQL
// scenario (docs/development.md, fault harness), read the way the SQLite
// ledger is read, as rows of text.
#ifndef CRONLEDGER_TESTS_FAULTS_PG_READ_H_
#define CRONLEDGER_TESTS_FAULTS_PG_READ_H_

#include <string>
#include <vector>

struct pg_conn;

namespace cronledger::faults {

// postgresql://... or postgres://...
bool IsPostgresUrl(const std::string& target);

// One connection, opened on first use and again after it was lost.
class PgConnection {
 public:
  explicit PgConnection(std::string url);
  ~PgConnection();
  PgConnection(const PgConnection&) = delete;
  PgConnection& operator=(const PgConnection&) = delete;

  // Runs `sql` (one statement, or several without results): true with its
  // rows as text (NULL as ""), or false with the server's message in *error.
  bool Query(const std::string& sql, std::vector<std::vector<std::string>>* rows,
             std::string* error);

 private:
  bool Open(std::string* error);

  std::string url_;
  pg_conn* conn_ = nullptr;
};

}  // namespace cronledger::faults

#endif  // CRONLEDGER_TESTS_FAULTS_PG_READ_H_
