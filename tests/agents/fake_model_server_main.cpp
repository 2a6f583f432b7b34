// ks-fake-model-server: the tests' model endpoint as a program, for the CLI tier.
//
//   ks-fake-model-server --api openai|anthropic [--port-file FILE] [--faults SPEC]
//                        [--slow-s S] [--log FILE]
//
// It listens on 127.0.0.1 at an ephemeral port, writes the port to FILE (or stdout), answers
// like a plausible model with the faults of SPEC (tests/agents/fake_model_server.hpp), and
// appends one line per request to --log ("<number> <path> <authorization or x-api-key>").
// SIGTERM or SIGINT stops it.

#include <csignal>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>

#include "fake_model_server.hpp"

namespace {

volatile std::sig_atomic_t stop = 0;

void on_signal(int) {
  stop = 1;
}

} // namespace

int main(int argc, char** argv) {
  std::string api = "openai";
  std::string port_file;
  std::string faults;
  std::string log;
  double slow_s = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    std::string value = argv[i + 1];
    if (flag == "--api")
      api = value;
    else if (flag == "--port-file")
      port_file = value;
    else if (flag == "--faults")
      faults = value;
    else if (flag == "--slow-s")
      slow_s = std::stod(value);
    else if (flag == "--log")
      log = value;
    else {
      std::cerr << "ks-fake-model-server: unknown option " << flag << "\n";
      return 1;
    }
  }
  auto kind = ks::agents::parse_api_kind(api);
  if (!kind) {
    std::cerr << "ks-fake-model-server: --api must be openai or anthropic\n";
    return 1;
  }
  std::signal(SIGTERM, on_signal);
  std::signal(SIGINT, on_signal);
  ks::test::fake_model_server server(*kind);
  server.set_faults(faults);
  server.set_slow_s(slow_s);
  if (port_file.empty()) {
    std::cout << server.port() << std::endl;
  } else {
    std::string temporary = port_file + ".tmp";
    std::ofstream(temporary) << server.port() << "\n";
    std::rename(temporary.c_str(), port_file.c_str());
  }
  size_t logged = 0;
  while (!stop) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (log.empty())
      continue;
    auto all = server.requests();
    std::ofstream out(log, std::ios::app);
    for (; logged < all.size(); ++logged) {
      const auto& r = all[logged];
      std::string key = r.headers.count("authorization") ? r.headers.at("authorization")
                        : r.headers.count("x-api-key")   ? r.headers.at("x-api-key")
                                                         : "-";
      out << r.number << " " << r.path << " " << key << "\n";
    }
  }
  return 0;
}
