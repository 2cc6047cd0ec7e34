// `cronledger effect run` and `cronledger checkpoint` as job commands really
// call them: inside steps of a real `serve`, over its HTTP API, with real
// files counting what the commands did.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli/subprocess.h"
#include "common/serve_process.h"
#include "common/temp_dir.h"

namespace cronledger {
namespace {

using Json = nlohmann::ordered_json;
using testing::Cronledger;
using testing::RunProcess;
using testing::ServeProcess;
using testing::ReadFile;
using testing::TempDir;
using testing::WaitFor;

std::size_t LineCount(const std::string& path) {
  const std::string text = ReadFile(path);
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

// A folder with a config whose job `tick` fires every second for
// `partitions` and runs `script` (written as step.sh) as its one step.
class EffectCliTest : public ::testing::Test {
 protected:
  void WriteJob(const std::string& script, const std::string& partitions = "[\"a\"]",
                const std::string& extra = "") {
    const std::string path = dir_.Write("step.sh", "#!/bin/sh\nCL=" CRONLEDGER_BIN "\n" + script);
    std::filesystem::permissions(path, std::filesystem::perms::owner_all);
    config_ = dir_.Write("cronledger.toml", R"([server]
listen = "127.0.0.1:0"
store = "sqlite:ledger.db"

[[job]]
name = "tick"
schedule = "* * * * * *"
timezone = "UTC"
catchup = "latest"
partitions = )" + partitions + "\n" + extra + R"(
  [[job.step]]
  name = "deliver"
  command = ["./step.sh"]
)");
  }

  Json Runs(const std::string& state) const {
    const auto r = Cronledger({"runs", "--config", config_, "--state", state, "--json"});
    return r.exit_code == 0 ? Json::parse(r.out)["runs"] : Json::array();
  }
  Json Run(int64_t id) const {
    const auto r = Cronledger({"runs", "--config", config_, "--run", std::to_string(id), "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? Json::parse(r.out) : Json::object();
  }
  // Waits (serve running) until at least `n` runs are in `state`.
  bool WaitForRuns(ServeProcess& serve, const std::string& state, std::size_t n) const {
    return WaitFor([&] { return !serve.Running() || Runs(state).size() >= n; }, 600) &&
           serve.Running();
  }
  std::string AttemptLog(const Json& run, std::size_t attempt = 0) const {
    return ReadFile(run["attempt_list"][attempt]["log_path"]);
  }

  TempDir dir_{"cronledger-effect-cli"};
  std::string config_;
};

TEST_F(EffectCliTest, AReplayPrintsTheStoredResultAndNeverRunsTheCommandAgain) {
  dir_.Write("message.txt", "Welcome aboard!\n");
  const std::string deliver = dir_.Write(
      "deliver.sh", "#!/bin/sh\nprintf 'sent\\n' >> " + dir_.File("deliveries") +
                        "\necho 'message-id 42'\n");
  std::filesystem::permissions(deliver, std::filesystem::perms::owner_all);
  // A fixed key: every run of the job after the first is a replay.
  WriteJob("exec $CL effect run --key welcome --fingerprint-file " + dir_.File("message.txt") +
           " -- ./deliver.sh\n");
  ServeProcess serve(config_, dir_.File("serve.log"));
  ASSERT_TRUE(WaitForRuns(serve, "succeeded", 3)) << ReadFile(dir_.File("serve.log"));
  EXPECT_EQ(serve.Stop(), 0);

  EXPECT_EQ(ReadFile(dir_.File("deliveries")), "sent\n");
  const Json succeeded = Runs("succeeded");  // newest first
  const Json first = Run(succeeded.back()["id"]);
  const Json later = Run(succeeded.front()["id"]);
  EXPECT_NE(AttemptLog(first).find("message-id 42"), std::string::npos) << AttemptLog(first);
  const std::string replay = AttemptLog(later);
  EXPECT_NE(replay.find("message-id 42"), std::string::npos) << replay;
  EXPECT_NE(replay.find("welcome: already committed (by run " +
                        std::to_string(first["id"].get<int64_t>()) + "); replayed"),
            std::string::npos)
      << replay;
  ASSERT_EQ(first["effects"].size(), 1u) << first.dump(2);
  EXPECT_EQ(first["effects"][0]["state"], "committed");
  EXPECT_EQ(first["effects"][0]["result"], "message-id 42\n");
  EXPECT_TRUE(std::string(first["effects"][0]["fingerprint"]).starts_with("sha256:"));
}

TEST_F(EffectCliTest, TheSameKeyWithAnotherFingerprintFailsTheRunAndDoesNothing) {
  // Each partition asks for the one key with its own fingerprint: whichever
  // goes first delivers, the other is refused with 65, a permanent failure.
  WriteJob("exec $CL effect run --key report --fingerprint \"for-$CRONLEDGER_PARTITION\" -- "
           "sh -c 'echo x >> " + dir_.File("deliveries") + "'\n",
           "[\"a\", \"b\"]");
  ServeProcess serve(config_, dir_.File("serve.log"));
  ASSERT_TRUE(WaitForRuns(serve, "failed", 1)) << ReadFile(dir_.File("serve.log"));
  EXPECT_EQ(serve.Stop(), 0);

  EXPECT_EQ(LineCount(dir_.File("deliveries")), 1u);
  const Json failed = Run(Runs("failed")[0]["id"]);
  const Json& attempt = failed["attempt_list"].back();
  EXPECT_EQ(attempt["exit_status"], 65) << failed.dump(2);
  EXPECT_EQ(attempt["end_class"], "permanent");
  const std::string log = AttemptLog(failed, failed["attempt_list"].size() - 1);
  EXPECT_NE(log.find("fingerprint"), std::string::npos) << log;
}

TEST_F(EffectCliTest, AnAttemptThatIsOverIsFencedOffAndRunsNothing) {
  // The step keeps its environment (credential, token) and ends; calling
  // with it afterwards is a stale attempt knocking.
  WriteJob("env > " + dir_.File("env-") + "$CRONLEDGER_RUN_ID\n");
  ServeProcess serve(config_, dir_.File("serve.log"));
  ASSERT_TRUE(WaitForRuns(serve, "succeeded", 1)) << ReadFile(dir_.File("serve.log"));
  const int64_t id = Runs("succeeded")[0]["id"];
  std::vector<std::string> env;
  std::istringstream lines(ReadFile(dir_.File("env-" + std::to_string(id))));
  for (std::string line; std::getline(lines, line);) env.push_back(line);
  ASSERT_FALSE(env.empty());

  const std::string ran = dir_.File("ran");
  auto r = RunProcess({CRONLEDGER_BIN, "effect", "run", "--key", "late", "--", "touch", ran}, env);
  EXPECT_EQ(r.exit_code, 76) << r.err;
  EXPECT_NE(r.err.find("is stale (this attempt no longer holds the run's lease"),
            std::string::npos)
      << r.err;
  r = RunProcess({CRONLEDGER_BIN, "checkpoint", "set", "9"}, env);
  EXPECT_EQ(r.exit_code, 76) << r.err;
  r = RunProcess({CRONLEDGER_BIN, "checkpoint", "get"}, env);
  EXPECT_EQ(r.exit_code, 76) << r.err;
  // A forged credential is not a step's at all.
  for (auto& e : env) {
    if (e.starts_with("CRONLEDGER_TOKEN=")) e += "0";
  }
  r = RunProcess({CRONLEDGER_BIN, "effect", "run", "--key", "late", "--", "touch", ran}, env);
  EXPECT_EQ(r.exit_code, 64) << r.err;
  EXPECT_EQ(serve.Stop(), 0);
  EXPECT_FALSE(std::filesystem::exists(ran));
  EXPECT_TRUE(Run(id)["effects"].empty());
}

TEST_F(EffectCliTest, WatermarksSetByOneAttemptAreWhatTheRetrySees) {
  // Attempt 1 moves both watermarks and asks for a retry (75); attempt 2
  // records what it was given.
  WriteJob("if [ \"$CRONLEDGER_ATTEMPT\" = 1 ]; then\n"
           "  $CL checkpoint set page-7 || exit 1\n"
           "  $CL checkpoint set --scope partition \"p-$CRONLEDGER_RUN_ID\" || exit 1\n"
           "  exit 75\n"
           "fi\n"
           "{ echo \"$CRONLEDGER_CHECKPOINT|$CRONLEDGER_CHECKPOINT_PARTITION\"; $CL checkpoint "
           "get; $CL checkpoint get --scope partition; } > " +
               dir_.File("seen-") + "$CRONLEDGER_RUN_ID\n",
           "[\"a\"]",
           "retry = { max_attempts = 2, initial_backoff = \"0s\", max_backoff = \"0s\", jitter = "
           "0 }\n");
  ServeProcess serve(config_, dir_.File("serve.log"));
  ASSERT_TRUE(WaitForRuns(serve, "succeeded", 1)) << ReadFile(dir_.File("serve.log"));
  EXPECT_EQ(serve.Stop(), 0);
  const int64_t id = Runs("succeeded").back()["id"];
  const std::string p = "p-" + std::to_string(id);
  EXPECT_EQ(ReadFile(dir_.File("seen-" + std::to_string(id))),
            "page-7|" + p + "\npage-7\n" + p + "\n");
}

// docs/gaps.md (rerun): a forced rerun of a succeeded run starts at the first
// step and never repeats a committed effect. Two steps: `generate` (no effect)
// and `deliver` (an effect keyed by the run key), one run key per day.
TEST_F(EffectCliTest, AForcedRerunStartsAtTheFirstStepAndNeverRepeatsACommittedEffect) {
  const std::string deliver = dir_.Write(
      "deliver.sh", "#!/bin/sh\nprintf 'sent\\n' >> " + dir_.File("deliveries") + "\n");
  std::filesystem::permissions(deliver, std::filesystem::perms::owner_all);
  const std::string generate = dir_.Write(
      "generate.sh", "#!/bin/sh\nprintf 'generated\\n' >> " + dir_.File("generated") + "\n");
  std::filesystem::permissions(generate, std::filesystem::perms::owner_all);
  WriteJob("exec $CL effect run --key \"$CRONLEDGER_RUN_KEY\" -- ./deliver.sh\n", R"(["a"])",
           "key = \"date\"\n\n  [[job.step]]\n  name = \"generate\"\n  command = "
           "[\"./generate.sh\"]\n");
  ServeProcess serve(config_, dir_.File("serve.log"));
  ASSERT_TRUE(WaitForRuns(serve, "succeeded", 1)) << ReadFile(dir_.File("serve.log"));
  const Json first = Runs("succeeded")[0];
  const std::string date = first["business_date"];
  const auto rerun = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"rerun", "--config", config_, "--job", "tick", "--date", date,
                                     "--reason", "the report was wrong", "--yes", "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    return Cronledger(args);
  };
  auto r = rerun({});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_EQ(r.err.rfind("cronledger rerun: nothing to queue (rerunning a succeeded run needs "
                        "--force)\nnot queued 1 key(s):\n",
                        0),
            0u)
      << r.err;
  r = rerun({"--force"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const int64_t event_id = Json::parse(r.out)["event_id"];
  const int64_t id = first["id"];
  ASSERT_TRUE(WaitFor(
      [&] { return !serve.Running() || (Run(id)["state"] == "succeeded" && Run(id)["attempts"] == 2); },
      600))
      << ReadFile(dir_.File("serve.log"));
  EXPECT_EQ(serve.Stop(), 0);

  EXPECT_EQ(ReadFile(dir_.File("generated")), "generated\ngenerated\n");
  EXPECT_EQ(ReadFile(dir_.File("deliveries")), "sent\n");
  const Json run = Run(id);
  ASSERT_EQ(run["attempt_list"].size(), 2u) << run.dump(2);
  EXPECT_TRUE(run["attempt_list"][0]["action_event_id"].is_null());
  EXPECT_EQ(run["attempt_list"][1]["action_event_id"], event_id);
  EXPECT_NE(AttemptLog(run, 1).find("already committed"), std::string::npos) << AttemptLog(run, 1);
  ASSERT_EQ(run["effects"].size(), 1u);
  EXPECT_EQ(run["effects"][0]["state"], "committed");
}

TEST(EffectCli, OutsideAStepOrWithBadArgumentsItRunsNothingAndSays64) {
  TempDir dir("cronledger-effect-cli");
  const std::string ran = dir.File("ran");
  const std::vector<std::string> clean_env = {"PATH=/usr/bin:/bin"};
  auto r = RunProcess({CRONLEDGER_BIN, "effect", "run", "--key", "k", "--", "touch", ran},
                      clean_env);
  EXPECT_EQ(r.exit_code, 64);
  EXPECT_NE(r.err.find("not inside a cronledger step (CRONLEDGER_API is not set)"),
            std::string::npos)
      << r.err;
  r = RunProcess({CRONLEDGER_BIN, "checkpoint", "get"}, clean_env);
  EXPECT_EQ(r.exit_code, 64);
  EXPECT_NE(r.err.find("not inside a cronledger step"), std::string::npos) << r.err;

  // Usage errors answer 64 too (EX_USAGE), so a step's retry classes treat
  // them as permanent.
  const std::vector<std::vector<std::string>> bad = {
      {"effect", "run", "--", "touch", ran},                   // no --key
      {"effect", "run", "--key", "k"},                          // no command
      {"effect", "run", "--key", "k", "--fingerprint", "a", "--fingerprint-file", "/etc/hostname",
       "--", "touch", ran},
      {"effect", "run", "--key", "k", "--checkpoint-scope", "run", "--", "touch", ran},
      {"effect", "run", "--key", "k", "--fingerprint-file", dir.File("absent"), "--", "touch",
       ran},
      {"effect", "run", "--key", "", "--", "touch", ran},
      {"checkpoint", "set"},
      {"checkpoint", "get", "--scope", "job"},
  };
  for (auto args : bad) {
    args.insert(args.begin(), CRONLEDGER_BIN);
    r = RunProcess(args, clean_env);
    EXPECT_EQ(r.exit_code, 64) << args[1] << " " << args[2] << ": " << r.err;
    EXPECT_FALSE(r.err.empty());
  }
  EXPECT_FALSE(std::filesystem::exists(ran));
}

// A serve that does not answer (here: nothing listens) is retried for
// about 10 s and then exits 75, retryable, without running CMD.
TEST(EffectCli, AServerThatDoesNotAnswerIsRetryableAndRunsNothing) {
  TempDir dir("cronledger-effect-cli");
  const std::string ran = dir.File("ran");
  const std::vector<std::string> env = {"PATH=/usr/bin:/bin", "CRONLEDGER_API=http://127.0.0.1:1/",
                                        "CRONLEDGER_TOKEN=t", "CRONLEDGER_RUN_ID=1",
                                        "CRONLEDGER_FENCING_TOKEN=1"};
  const auto r =
      RunProcess({CRONLEDGER_BIN, "effect", "run", "--key", "k", "--", "touch", ran}, env);
  EXPECT_EQ(r.exit_code, 75) << r.err;
  EXPECT_EQ(r.err.rfind("cronledger effect run: the server at http://127.0.0.1:1/ cannot be "
                       "reached",
                       0),
            0u)
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(ran));
}

}  // namespace
}  // namespace cronledger
