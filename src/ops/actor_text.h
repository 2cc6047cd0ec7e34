// Who acts and why, as an operator action records them (`by` / --by and
// `reason` / --reason), checked alike by the API and the command line:
// valid UTF-8 without C0 or C1 control characters or DEL (an operator's
// name need not be ASCII; a reason may hold newlines and tabs), not blank,
// `by` at most 256 bytes and `reason` at most 4,096. Such text reaches
// logs, terminals and the dashboard as it is.
#ifndef CRONLEDGER_OPS_ACTOR_TEXT_H_
#define CRONLEDGER_OPS_ACTOR_TEXT_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace cronledger::ops {

inline constexpr std::size_t kMaxReasonBytes = 4096;
inline constexpr std::size_t kMaxActorBytes = 256;

enum class ActorField { kBy, kReason };

// Who acts, for whom and why, as the action's event records them: the
// actor is who called (through the API the token's name, locally the OS
// user), never a name the caller chose; the name it gave (`by`, --by) is
// recorded beside it.
struct Actor {
  std::string actor;
  std::string reason;
  std::string on_behalf_of;  // empty: none given
};

// "" when `text` may be recorded as the field; else what is wrong, as the
// end of a sentence naming the field: "is blank: ...", "is 300 bytes; at
// most 256", "is not valid UTF-8 at byte 4", "holds the control character
// U+001B at byte 2".
std::string ActorTextProblem(ActorField field, std::string_view text);

}  // namespace cronledger::ops

#endif  // CRONLEDGER_OPS_ACTOR_TEXT_H_
