// Whether another `serve` still runs under a node id, before this one
// takes it: leases, attempts, events and roles are held by node name, so
// two live processes under one name would both think they hold its roles
// (two scanners, two alerters) and show as one node.
#ifndef CRONLEDGER_NODE_NODE_ID_CHECK_H_
#define CRONLEDGER_NODE_NODE_ID_CHECK_H_

#include <chrono>
#include <stop_token>
#include <string>

#include "cronledger/clock.h"
#include "store/store.h"

namespace cronledger::node {

// Ok when `self.node`'s id is free: never seen, stopped cleanly, not seen
// for kNodeAliveWithin, or last beaten by a process of this host
// (`self.host`) that no longer exists. Otherwise the last process under
// it may have crashed elsewhere or still run: it is watched for up to two
// beats (`beat_every`) plus a second, and a new beat means another serve
// uses the id: kInvalidArgument saying so. No beat: taken over. `stop`
// ends the watch: Ok with `*stopped` set, and the node does not start.
// kUnavailable when the store cannot be read.
Status RefuseANodeIdInUse(store::Store& store, const store::NodeBeat& self, Clock& clock,
                          std::chrono::seconds beat_every, std::stop_token stop, bool* stopped);

}  // namespace cronledger::node

#endif  // CRONLEDGER_NODE_NODE_ID_CHECK_H_
