// How serve tells a store outage from its end: any call's failure starts
// one, and only a write that succeeds ends it, since on a full disk reads
// and empty transactions keep succeeding while nothing can be written.
#include "engine/store_health.h"

#include <gtest/gtest.h>

namespace cronledger::engine {
namespace {

const Status kFull(StatusCode::kIOError, "database or disk is full");

TEST(StoreHealth, OnlyASuccessfulWriteEndsAnOutage) {
  StoreHealth health;
  EXPECT_TRUE(health.up());
  EXPECT_TRUE(health.Observe(kFull, "worker writes", StoreCall::kWrite));
  EXPECT_FALSE(health.up());
  // Reads (and a claim that found nothing) still succeed on a full disk.
  EXPECT_FALSE(health.Observe(Status::Ok(), "clock"));
  EXPECT_FALSE(health.Observe(Status::Ok(), "claim", StoreCall::kRead));
  EXPECT_FALSE(health.up());
  EXPECT_TRUE(health.Observe(kFull, "node heartbeat", StoreCall::kWrite));
  EXPECT_EQ(health.errors(), 2);
  EXPECT_FALSE(health.up());
  EXPECT_FALSE(health.Observe(Status::Ok(), "node heartbeat", StoreCall::kWrite));
  EXPECT_TRUE(health.up());
  EXPECT_EQ(health.errors(), 2);
}

TEST(StoreHealth, AnswersOfTheLedgerAreNotOutages) {
  StoreHealth health;
  EXPECT_FALSE(
      health.Observe(Status(StatusCode::kStaleLease, "stale"), "heartbeat", StoreCall::kWrite));
  EXPECT_FALSE(health.Observe(Status(StatusCode::kConflict, "taken"), "claim"));
  EXPECT_TRUE(health.up());
  EXPECT_EQ(health.errors(), 0);
}

}  // namespace
}  // namespace cronledger::engine
