// The throwaway PostgreSQL server the tests use (scripts/pg-server.sh, the
// ctest fixture pg_server). Only libpq-free text here, so that test binaries
// that do not link the store (the fault harness) can find the server too.
// The including target defines CRONLEDGER_TEST_PG_STATE (the fixture's
// state folder) when it compiles pg_test_server.cc.
#ifndef CRONLEDGER_TESTS_STORE_PG_TEST_SERVER_H_
#define CRONLEDGER_TESTS_STORE_PG_TEST_SERVER_H_

#include <string>

namespace cronledger::testing {

// $CRONLEDGER_TEST_PG_URL, or the one ctest's pg_server fixture started
// (scripts/pg-server.sh); "" when there is none.
std::string TestPostgresUrl();
// A URL of that server whose connections use `schema` (search_path). The
// schema must exist: create it first.
std::string TestPostgresSchemaUrl(const std::string& schema);
// A URL of that server's database `database` (which must exist), for a test
// that needs what is scoped to a database to itself: advisory locks and
// LISTEN channels are shared by every schema of one database.
std::string TestPostgresDatabaseUrl(const std::string& database);

}  // namespace cronledger::testing

#endif  // CRONLEDGER_TESTS_STORE_PG_TEST_SERVER_H_
