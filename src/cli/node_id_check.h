// Whether another `serve` still runs under a node id, before this one
// takes it: leases, attempts, events and roles are held by node name, so
// two live processes under one name would both think they hold its roles
// (two scanners, two alerters) and show as one node.
#ifndef CRONLEDGER_CLI_NODE_ID_CHECK_H_
#define CRONLEDGER_CLI_NODE_ID_CHECK_H_

#include <chrono>
#include <ostream>
#include <string>

#include "cronledger/clock.h"
#include "store/store.h"

namespace cronledger::cli {

// kExitOk when `node_id` is free: never seen, stopped cleanly, or not seen
// for kNodeAliveWithin. A node seen more recently that did not stop cleanly
// either crashed or still runs: it is watched for up to two beats
// (`beat_every`) plus a second, and a new beat means another serve uses the
// id: a message on `err` and kExitUsage. Otherwise the id is taken over.
int RefuseANodeIdInUse(store::Store& store, const std::string& node_id, Clock& clock,
                       std::chrono::seconds beat_every, std::ostream& err);

}  // namespace cronledger::cli

#endif  // CRONLEDGER_CLI_NODE_ID_CHECK_H_
