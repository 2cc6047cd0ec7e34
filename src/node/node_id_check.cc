#include "node/node_id_check.h"

#include <errno.h>
#include <signal.h>
#include <unistd.h>

#include <optional>
#include <stop_token>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "ops/json_shapes.h"
#include "ops/ledger_json.h"

namespace cronledger::node {
namespace {

Result<std::optional<store::NodeRecord>> Find(store::Store& store, const std::string& node_id) {
  auto nodes = store.NodeList();
  if (!nodes.ok()) return nodes.status();
  for (auto& n : *nodes) {
    if (n.node == node_id) return std::optional<store::NodeRecord>(std::move(n));
  }
  return std::optional<store::NodeRecord>();
}

Status Unavailable(const Status& s) {
  return Status(StatusCode::kUnavailable, "store unavailable: " + s.message());
}

// Whether process `pid` of this host is gone. This process's own pid
// counts as gone: the one that beat with it has ended (a container's pid 1
// restarted, say).
bool ProcessGone(int64_t pid) {
  if (pid <= 0) return false;
  if (pid == static_cast<int64_t>(getpid())) return true;
  return kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

}  // namespace

Status RefuseANodeIdInUse(store::Store& store, const store::NodeBeat& self, Clock& clock,
                          std::chrono::seconds beat_every, std::stop_token stop, bool* stopped) {
  *stopped = false;
  const std::string& node_id = self.node;
  auto seen = Find(store, node_id);
  if (!seen.ok()) return Unavailable(seen.status());
  if (!seen->has_value()) return Status::Ok();
  const store::NodeRecord last = **seen;
  auto now = store.LedgerNow(store::ToInstant(clock.Now()));
  if (!now.ok()) return Unavailable(now.status());
  if (!ops::NodeAlive(last, *now)) return Status::Ok();
  if (!last.host.empty() && last.host == self.host && ProcessGone(last.pid)) {
    spdlog::info("serve: node id {} was last used by process {} of this host, which is gone",
                 node_id, last.pid);
    return Status::Ok();
  }

  const auto watch = 2 * beat_every + std::chrono::seconds{1};
  spdlog::info("serve: node id {} beat at {} and did not stop cleanly; watching it for {} s in "
               "case another serve still runs under it",
               node_id, ops::FormatInstant(last.last_seen_at), watch.count());
  for (auto waited = std::chrono::seconds{0}; waited < watch; waited += std::chrono::seconds{1}) {
    if (!clock.SleepFor(std::chrono::seconds{1}, stop)) {
      *stopped = true;
      return Status::Ok();
    }
    auto again = Find(store, node_id);
    if (!again.ok()) return Unavailable(again.status());
    if (!again->has_value() || (*again)->stopped_at) return Status::Ok();
    const store::NodeRecord& n = **again;
    if (n.last_seen_at != last.last_seen_at || n.started_at != last.started_at) {
      return InvalidArgument(fmt::format(
          "node id \"{}\" is in use by another serve (started {}{}{}, "
          "beating now); give each node its own --node-id or [server] node_id",
          node_id, ops::FormatInstant(n.started_at),
          n.host.empty() ? "" : fmt::format(", process {} on {}", n.pid, n.host),
          n.listen.empty() ? "" : ", listening on " + n.listen));
    }
  }
  spdlog::info("serve: node id {} is free: its serve stopped beating at {}", node_id,
               ops::FormatInstant(last.last_seen_at));
  return Status::Ok();
}

}  // namespace cronledger::node
