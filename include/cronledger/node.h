// A cronledger node, for C++ programs that embed the ledger: the same
// planner, dispatcher, reaper, gap scanner, alerter and HTTP API that
// `cronledger serve` runs, with in-process step handlers registered by the
// program (jobs with executor = "inprocess").
//
//   auto config = cronledger::Config::Load("jobs.toml");
//   auto node = cronledger::Node::Open(*config, {});
//   (*node)->Register("nightly_export", [](const cronledger::RunContext& ctx) { ...; return 0; });
//   (*node)->Run(stop_token);   // until stopped; then drains
//
// `serve` is this node with flags, signals and log lines around it.
// docs/embedding.md explains it, with examples/embed/ as a whole program.
#ifndef CRONLEDGER_NODE_H_
#define CRONLEDGER_NODE_H_

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "cronledger/clock.h"
#include "cronledger/handler.h"
#include "cronledger/status.h"

namespace cronledger {

namespace config {
struct Config;
}  // namespace config

class Config;
namespace detail {
const config::Config& ConfigOf(const Config& config);
}  // namespace detail

// A validated configuration (docs/config.md). Cheap to copy; immutable.
class Config {
 public:
  // Reads and validates the TOML file at `path`. On error the status is
  // kInvalidArgument and its message holds one line per problem, each
  // "FILE:LINE: what is wrong". Relative paths in it (the SQLite file,
  // commands, log_dir) resolve against the file's folder.
  static Result<Config> Load(const std::string& path);
  // As Load, for TOML text: `path` names it in messages, and its folder is
  // where relative paths resolve. Nothing is read from `path`.
  static Result<Config> Parse(std::string_view toml, const std::string& path);

  // The configured jobs' names, in file order.
  std::vector<std::string> JobNames() const;

 private:
  explicit Config(std::shared_ptr<const config::Config> impl) : impl_(std::move(impl)) {}
  friend const config::Config& detail::ConfigOf(const Config& config);
  std::shared_ptr<const config::Config> impl_;
};

struct NodeOptions {
  // The ledger, instead of the config's [server] store: "sqlite:FILE"
  // (relative to the current directory) or "postgresql://...".
  std::optional<std::string> store;
  // Instead of [server] listen; "127.0.0.1:0" takes any free port (see
  // Node::url). Without [[auth.token]] entries only loopback is allowed.
  std::optional<std::string> listen;
  // Instead of [server] node_id (default: host name and listen port).
  std::optional<std::string> node_id;
  // Every instant the node reads or waits for; RealClock() when null. Must
  // outlive the node.
  Clock* clock = nullptr;
  // The program a subprocess step finds as $CRONLEDGER_BIN (its `effect
  // run` and `checkpoint`): an embedding program is not `cronledger`.
  // Empty: the variable is not set.
  std::string cronledger_bin;
  // Without [[auth.token]] entries the node keeps an operator token in
  // cronledger.token beside the config and logs a one-time dashboard login
  // link; when set, the link goes here instead of into the log line.
  std::function<void(const std::string& link)> on_login_link;
};

class Node {
 public:
  // Checks the options, binds the API's address and opens the store; a
  // node that fails here has started nothing and written nothing.
  // kInvalidArgument: a bad option, a taken address; kUnavailable: the
  // store cannot be opened.
  static Result<std::unique_ptr<Node>> Open(const Config& config, NodeOptions options = {});
  ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // Registers `handler` for every step of `job` (step empty) or for one
  // step; a step's own handler wins over the job's. The job must have
  // executor = "inprocess" (kInvalidArgument otherwise, or for a step it
  // does not have). Call before Run. A handler runs on a worker thread,
  // once per step attempt, and returns an exit status with a subprocess's
  // meaning (0 success, 75 retryable, 64/65/66/77/78 permanent).
  Status Register(const std::string& job, StepHandler handler, const std::string& step = "");

  // Runs until `stop` is requested, then drains: no new claims; running
  // steps get `drain_grace` (default: [server] drain_timeout) to finish,
  // after which they are stopped. First it makes sure no other live
  // process uses this node id (kInvalidArgument if one does; a stop
  // requested during that check returns Ok having started nothing).
  // kUnavailable: the store could not be reached at the start. Once only.
  Status Run(std::stop_token stop, std::optional<std::chrono::seconds> drain_grace = {});

  // The node's id, and its API's base URL (http://HOST:PORT).
  const std::string& id() const;
  std::string url() const;

 private:
  struct Impl;
  explicit Node(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace cronledger

#endif  // CRONLEDGER_NODE_H_
