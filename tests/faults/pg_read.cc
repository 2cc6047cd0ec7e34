#include "faults/pg_read.h"

#include <libpq-fe.h>

namespace cronledger::faults {

bool IsPostgresUrl(const std::string& target) {
  return target.rfind("postgresql://", 0) == 0 || target.rfind("postgres://", 0) == 0;
}

PgConnection::PgConnection(std::string url) : url_(std::move(url)) {}

PgConnection::~PgConnection() { PQfinish(conn_); }

bool PgConnection::Open(std::string* error) {
  if (conn_ != nullptr && PQstatus(conn_) == CONNECTION_OK) return true;
  PQfinish(conn_);
  conn_ = PQconnectdb(url_.c_str());
  if (conn_ == nullptr || PQstatus(conn_) != CONNECTION_OK) {
    *error = conn_ ? PQerrorMessage(conn_) : "out of memory";
    PQfinish(conn_);
    conn_ = nullptr;
    return false;
  }
  PQsetNoticeProcessor(conn_, [](void*, const char*) {}, nullptr);
  return true;
}

bool PgConnection::Query(const std::string& sql, std::vector<std::vector<std::string>>* rows,
                         std::string* error) {
  rows->clear();
  if (!Open(error)) return false;
  PGresult* r = PQexec(conn_, sql.c_str());
  const ExecStatusType st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
  if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
    *error = r ? PQresultErrorMessage(r) : PQerrorMessage(conn_);
    if (error->empty()) *error = PQerrorMessage(conn_);
    PQclear(r);
    return false;
  }
  for (int i = 0; i < PQntuples(r); ++i) {
    std::vector<std::string> row;
    for (int c = 0; c < PQnfields(r); ++c) {
      row.emplace_back(PQgetvalue(r, i, c), static_cast<std::size_t>(PQgetlength(r, i, c)));
    }
    rows->push_back(std::move(row));
  }
  PQclear(r);
  return true;
}

}  // namespace cronledger::faults
