// A program that embeds a cronledger node: the job `export_orders` of
// cronledger.toml runs as the C++ handler below, under the same ledger,
// leases, fencing tokens and effect records as `cronledger serve`'s
// subprocess steps.
//
//   embed_example CONFIG [RUNS]
//
// Runs until SIGINT or SIGTERM, or until RUNS runs have published. Each run
// appends its slot to outbox.txt beside the config, at most once in effect:
// a retry or a rerun of the same run key finds the effect committed and does
// not append again. Exit 0 after a clean stop, 2 on a config error, 3 when
// the store cannot be opened.
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>

#include <cronledger/node.h>

namespace {

int ExitCode(const cronledger::Status& s) {
  if (s.ok()) return 0;
  return s.code() == cronledger::StatusCode::kUnavailable ? 3 : 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::cerr << "usage: embed_example CONFIG [RUNS]\n";
    return 2;
  }
  const std::string config_path = argv[1];
  const int runs = argc == 3 ? std::atoi(argv[2]) : 0;
  const std::string folder = config_path.substr(0, config_path.find_last_of('/') + 1);
  const std::string outbox = folder + "outbox.txt";

  auto config = cronledger::Config::Load(config_path);
  if (!config.ok()) {
    std::cerr << "embed_example: " << config.status().message() << "\n";
    return 2;
  }
  // The node's threads inherit this mask; one thread of ours takes the
  // signals and turns them into a stop.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto node = cronledger::Node::Open(*config);
  if (!node.ok()) {
    std::cerr << "embed_example: " << node.status().message() << "\n";
    return ExitCode(node.status());
  }

  std::stop_source stop;
  std::atomic<int> published{0};
  const cronledger::Status registered = (*node)->Register(
      "export_orders", [&](const cronledger::RunContext& ctx) {
        // Where the previous run of this partition got to.
        std::string previous;
        if (int rc = ctx.ReadCheckpoint(&previous, cronledger::CheckpointScope::kPartition);
            rc != 0) {
          return rc;
        }
        std::string receipt;
        const int rc = ctx.Effect(
            "outbox-" + ctx.period, /*fingerprint=*/"",
            [&] {
              std::ofstream out(outbox, std::ios::app);
              out << ctx.period << " " << ctx.run_key << "\n";
              out.flush();
              // Non-zero means it did not happen: a later attempt does it.
              return cronledger::EffectResult{out ? 0 : 75, "appended " + ctx.period};
            },
            /*reconcile=*/{}, &receipt);
        if (rc != 0) return rc;  // 75 retries; 76: our lease moved on, stop
        // The watermark, fenced by this attempt's token like the effect.
        if (int rc = ctx.Checkpoint(ctx.period, cronledger::CheckpointScope::kPartition);
            rc != 0) {
          return rc;
        }
        std::cout << ctx.run_key << ": " << receipt << " (after " << (previous.empty() ? "-" : previous)
                  << ")" << std::endl;
        if (runs > 0 && ++published >= runs) stop.request_stop();
        return 0;
      });
  if (!registered.ok()) {
    std::cerr << "embed_example: " << registered.message() << "\n";
    return 2;
  }

  std::thread([&stop, signals] {
    int sig = 0;
    sigwait(&signals, &sig);
    stop.request_stop();
  }).detach();

  std::cerr << "embed_example: node " << (*node)->id() << " at " << (*node)->url() << "\n";
  const cronledger::Status ran = (*node)->Run(stop.get_token());
  if (!ran.ok()) std::cerr << "embed_example: " << ran.message() << "\n";
  return ExitCode(ran);
}
