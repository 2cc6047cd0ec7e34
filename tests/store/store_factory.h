// Store factories for the conformance suite: every case runs against every
// backend bound here: SQLite and PostgreSQL.
#ifndef CRONLEDGER_TESTS_STORE_STORE_FACTORY_H_
#define CRONLEDGER_TESTS_STORE_STORE_FACTORY_H_

#include <functional>
#include <ostream>
#include <memory>
#include <string>
#include <vector>

#include "store/pg_test_server.h"
#include "store/store.h"

namespace cronledger::testing {

// One backend under test. `Open` may be called several times per test (to
// reopen the same database); each test gets a fresh database.
class StoreBackend {
 public:
  virtual ~StoreBackend() = default;
  virtual std::string Name() const = 0;
  virtual Result<std::unique_ptr<store::Store>> Open() = 0;
  // Makes the database claim it needs a binary with schema version `v`, as
  // a newer release would (backend-specific SQL).
  virtual void SetCompatibleFrom(int v) = 0;
};

struct StoreFactory {
  std::string name;
  std::function<std::unique_ptr<StoreBackend>()> make;
};

// Every engine with every instant pinned by the test.
std::vector<StoreFactory> AllStoreFactories();
// PostgreSQL as production runs it (PostgresOptions::database_clock): the
// caller's `now` is ignored, the server's clock decides
// (conformance_database_clock_test.cc).
std::vector<StoreFactory> DatabaseClockFactories();

inline void PrintTo(const StoreFactory& f, std::ostream* os) { *os << f.name; }

}  // namespace cronledger::testing

namespace cronledger::store {
inline void PrintTo(const StepState& s, std::ostream* os) {
  *os << s.name << ":" << ledger::Name(s.state);
}
}  // namespace cronledger::store

#endif  // CRONLEDGER_TESTS_STORE_STORE_FACTORY_H_
