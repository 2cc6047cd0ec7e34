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

// kExitOk when `self.node`'s id is free: never seen, stopped cleanly, not
// seen for kNodeAliveWithin, or last beaten by a process of this host
// (`self.host`) that no longer exists. Otherwise the last process under
// it may have crashed elsewhere or still run: it is watched for up to two
// beats (`beat_every`) plus a second, and a new beat means another serve
// uses the id: a message on `err` and kExitUsage. No beat: taken over.
// SIGTERM or SIGINT (blocked, so pending) ends the watch: kExitOk with
// `*stopped` set, and serve exits without starting.
int RefuseANodeIdInUse(store::Store& store, const store::NodeBeat& self, Clock& clock,
                       std::chrono::seconds beat_every, std::ostream& err, bool* stopped);

}  // namespace cronledger::cli

#endif  // CRONLEDGER_CLI_NODE_ID_CHECK_H_
