// The embedding API's refusals: what Node::Open and Node::Register say
// about bad options and handlers, on a real SQLite ledger, before anything
// runs. (Running a node is shown end to end by embed_installed_package.)
#include "cronledger/node.h"

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "common/temp_dir.h"

namespace cronledger {
namespace {

const char* const kConfig = R"(
[server]
store = "sqlite:ledger.db"
listen = "127.0.0.1:0"

[[job]]
name = "export"
schedule = "0 3 * * *"
timezone = "UTC"
executor = "inprocess"
  [[job.step]]
  name = "publish"
  timeout = "1m"

[[job]]
name = "report"
schedule = "0 4 * * *"
timezone = "UTC"
  [[job.step]]
  name = "generate"
  command = ["/bin/true"]
  timeout = "1m"
)";

class NodeTest : public ::testing::Test {
 protected:
  Config Load() {
    auto config = Config::Parse(kConfig, (std::filesystem::path(dir_.path()) / "c.toml").string());
    EXPECT_TRUE(config.ok()) << config.status().message();
    return *config;
  }
  testing::TempDir dir_;
};

TEST_F(NodeTest, ParseReportsEveryProblemWithItsLine) {
  auto config = Config::Parse("[server]\nstore = 3\nbogus = 1\n", "/tmp/x.toml");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), StatusCode::kInvalidArgument);
  const std::string m = config.status().message();
  EXPECT_NE(m.find("/tmp/x.toml:2"), std::string::npos) << m;
  EXPECT_NE(m.find("/tmp/x.toml:3"), std::string::npos) << m;
  EXPECT_NE(m.find('\n'), std::string::npos) << "one line per problem: " << m;
}

TEST_F(NodeTest, JobNamesInFileOrder) {
  EXPECT_EQ(Load().JobNames(), (std::vector<std::string>{"export", "report"}));
}

TEST_F(NodeTest, RegisterTakesOnlyInprocessJobsAndTheirSteps) {
  auto node = Node::Open(Load());
  ASSERT_TRUE(node.ok()) << node.status().message();
  const StepHandler ok = [](const RunContext&) { return 0; };
  EXPECT_TRUE((*node)->Register("export", ok).ok());
  EXPECT_TRUE((*node)->Register("export", ok, "publish").ok());

  const Status subprocess = (*node)->Register("report", ok);
  EXPECT_EQ(subprocess.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(subprocess.message().find("inprocess"), std::string::npos) << subprocess.message();
  const Status no_step = (*node)->Register("export", ok, "deliver");
  EXPECT_EQ(no_step.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(no_step.message().find("\"deliver\""), std::string::npos) << no_step.message();
  EXPECT_EQ((*node)->Register("nope", ok).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ((*node)->Register("export", StepHandler{}).code(), StatusCode::kInvalidArgument);
}

TEST_F(NodeTest, OpenRefusesBadOptionsAndWritesNothing) {
  const Config config = Load();
  NodeOptions wide;
  wide.listen = "0.0.0.0:0";  // beyond loopback without [[auth.token]]
  auto listen = Node::Open(config, wide);
  ASSERT_FALSE(listen.ok());
  EXPECT_EQ(listen.status().code(), StatusCode::kInvalidArgument);

  NodeOptions bad_store;
  bad_store.store = "mysql://x";
  auto store = Node::Open(config, bad_store);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(store.status().message().find("mysql://x"), std::string::npos)
      << store.status().message();

  NodeOptions bad_id;
  bad_id.node_id = "has space";
  EXPECT_EQ(Node::Open(config, bad_id).status().code(), StatusCode::kInvalidArgument);

  EXPECT_FALSE(std::filesystem::exists(std::filesystem::path(dir_.path()) / "ledger.db"));
}

TEST_F(NodeTest, OpenUsesTheStoreAndIdItIsGiven) {
  NodeOptions options;
  options.store = "sqlite:" + (std::filesystem::path(dir_.path()) / "other.db").string();
  options.node_id = "embedded-1";
  auto node = Node::Open(Load(), options);
  ASSERT_TRUE(node.ok()) << node.status().message();
  EXPECT_EQ((*node)->id(), "embedded-1");
  EXPECT_EQ((*node)->url().rfind("http://127.0.0.1:", 0), 0u) << (*node)->url();
  EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(dir_.path()) / "other.db"));
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::path(dir_.path()) / "ledger.db"));
}

}  // namespace
}  // namespace cronledger
