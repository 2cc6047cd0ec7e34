#include "store/pg_test_server.h"

#include <stdlib.h>

#include <fstream>

namespace cronledger::testing {

std::string TestPostgresUrl() {
  if (const char* env = getenv("CRONLEDGER_TEST_PG_URL"); env != nullptr && *env != '\0') {
    return env;
  }
  std::ifstream in(std::string(CRONLEDGER_TEST_PG_STATE) + "/url");
  std::string url;
  std::getline(in, url);
  return url;
}

std::string TestPostgresSchemaUrl(const std::string& schema) {
  const std::string server = TestPostgresUrl();
  return server + (server.find('?') == std::string::npos ? "?" : "&") +
         "options=-csearch_path%3D" + schema;
}

std::string TestPostgresDatabaseUrl(const std::string& database) {
  const std::string server = TestPostgresUrl();
  const std::size_t host = server.find("://");
  const std::size_t path = server.find('/', host == std::string::npos ? 0 : host + 3);
  if (path == std::string::npos) return server + "/" + database;
  const std::size_t query = server.find('?', path);
  return server.substr(0, path + 1) + database +
         (query == std::string::npos ? "" : server.substr(query));
}

}  // namespace cronledger::testing
