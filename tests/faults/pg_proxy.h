// A TCP proxy between one `serve` and the PostgreSQL server for the fault
// harness: it reads enough of the frontend/backend protocol (version 3) to
// follow each transaction the client runs, and cuts the connection at a
// COMMIT of the test's choosing.
//
// From client to server it parses every message: the startup packets, then
// Parse (a prepared statement's name and text), Bind (which statement runs,
// with its parameters as text) and Query (simple queries: BEGIN, COMMIT,
// ROLLBACK). Server to client is copied as it comes. When armed (Arm), the
// COMMIT of the next transaction that ran a statement containing the cut's
// `match` is either forwarded and then the connection closed on both sides
// (the server commits; the client never learns it) or not forwarded at all
// (the server rolls back). Either way the client sees a connection lost at
// COMMIT, an outcome it cannot know. SetDown(true) is an outage: every
// connection is closed and new ones are closed as soon as they come.
#ifndef CRONLEDGER_TESTS_FAULTS_PG_PROXY_H_
#define CRONLEDGER_TESTS_FAULTS_PG_PROXY_H_

#include <atomic>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace cronledger::faults {

// One statement of a transaction: its SQL text and, for a prepared one,
// the parameters it was bound with (nullopt: NULL).
struct ProxiedStatement {
  std::string sql;
  std::vector<std::optional<std::string>> params;
};

struct Cut {
  // The transaction ran a statement whose text contains this; "" matches
  // every transaction.
  std::string match;
  // true: the COMMIT reaches the server, then the connection is closed;
  // false: the connection is closed instead of sending the COMMIT.
  bool forward_commit = true;
};

struct CutRecord {
  Cut cut;
  std::vector<ProxiedStatement> transaction;  // from BEGIN up to the COMMIT
};

class PgProxy {
 public:
  // Listens on 127.0.0.1 (any free port) and relays to upstream_port there.
  explicit PgProxy(int upstream_port);
  // Closes everything and joins its threads.
  ~PgProxy();
  PgProxy(const PgProxy&) = delete;
  PgProxy& operator=(const PgProxy&) = delete;

  int port() const { return port_; }

  // The next COMMIT of a matching transaction is cut (one cut per Arm).
  void Arm(Cut cut);
  bool Armed() const;
  std::vector<CutRecord> Cuts() const;

  // An outage while `down`: connections are closed, new ones refused (closed
  // at once, as a server going away does).
  void SetDown(bool down);

  int connections() const { return connections_; }  // accepted so far
  int commits() const { return commits_; }          // COMMITs relayed or cut

 private:
  void AcceptLoop();
  void Relay(int client);

  int listen_fd_ = -1;
  int port_ = 0;
  int upstream_port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<bool> down_{false};
  std::atomic<int> connections_{0};
  std::atomic<int> commits_{0};
  mutable std::mutex mu_;
  std::optional<Cut> armed_;
  std::vector<CutRecord> cuts_;
  std::vector<std::thread> relays_;  // guarded by mu_
  std::thread acceptor_;
};

}  // namespace cronledger::faults

#endif  // CRONLEDGER_TESTS_FAULTS_PG_PROXY_H_
