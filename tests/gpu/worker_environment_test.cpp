#include "gpu/worker_environment.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

using namespace ks;

namespace {

bool holds(const std::vector<std::string>& env, const std::string& entry) {
  return std::find(env.begin(), env.end(), entry) != env.end();
}

bool names(const std::vector<std::string>& env, const std::string& name) {
  return std::any_of(env.begin(), env.end(),
                     [&](const std::string& e) { return e.rfind(name + "=", 0) == 0; });
}

} // namespace

TEST_CASE("a variable named like a secret is never passed to the worker", "[boundary]") {
  const std::vector<std::string> none;
  for (const char* name :
       {"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "MY_TOKEN", "github_token", "AWS_SECRET_ACCESS_KEY",
        "DB_PASSWORD", "SMB_PASSWD", "GOOGLE_APPLICATION_CREDENTIALS", "CUDA_AUTH", "KS_API_KEY",
        "NVIDIA_API_KEY", "KS_Secret"})
    CHECK(gpu::is_secret_variable(name, none));
  for (const char* name : {"PATH", "CUDA_VISIBLE_DEVICES", "LANG", "KS_SCRIPT"})
    CHECK_FALSE(gpu::is_secret_variable(name, none));
  const std::vector<std::string> configured{"KS_MODEL_BEARER"};
  CHECK(gpu::is_secret_variable("KS_MODEL_BEARER", configured));
  CHECK_FALSE(gpu::is_secret_variable("KS_MODEL", configured));
}

TEST_CASE("the worker's environment is an allowlist with TMPDIR set to its folder", "[boundary]") {
  const std::vector<std::string> parent{
      "PATH=/usr/bin:/bin",
      "HOME=/home/someone",
      "LD_LIBRARY_PATH=/usr/local/cuda/lib64",
      "LANG=C.UTF-8",
      "LC_ALL=C",
      "TZ=UTC",
      "CUDA_VISIBLE_DEVICES=1",
      "NVIDIA_VISIBLE_DEVICES=all",
      "__GL_SHADER_DISK_CACHE=0",
      "KS_SCRIPT=ok",
      "KS_MODEL_BEARER=sk-configured",
      "OPENAI_API_KEY=sk-secret",
      "CUDA_SOME_TOKEN=tok",
      "TMPDIR=/var/tmp/engine",
      "TMP=/var/tmp",
      "LD_PRELOAD=/evil.so",
      "SSH_AUTH_SOCK=/tmp/ssh-agent",
      "DISPLAY=:0",
      "HTTPS_PROXY=http://proxy:3128",
      "=no name",
      "no equals sign",
  };
  const std::vector<std::string> secret{"KS_MODEL_BEARER"};
  auto env = gpu::worker_environment(parent, secret, "/tmp/ks-worker-1-abc");

  for (const char* kept :
       {"PATH=/usr/bin:/bin", "HOME=/home/someone", "LD_LIBRARY_PATH=/usr/local/cuda/lib64",
        "LANG=C.UTF-8", "LC_ALL=C", "TZ=UTC", "CUDA_VISIBLE_DEVICES=1",
        "NVIDIA_VISIBLE_DEVICES=all", "__GL_SHADER_DISK_CACHE=0", "KS_SCRIPT=ok"})
    CHECK(holds(env, kept));
  for (const char* dropped : {"KS_MODEL_BEARER", "OPENAI_API_KEY", "CUDA_SOME_TOKEN", "TMP",
                              "LD_PRELOAD", "SSH_AUTH_SOCK", "DISPLAY", "HTTPS_PROXY"})
    CHECK_FALSE(names(env, dropped));
  CHECK(holds(env, "TMPDIR=/tmp/ks-worker-1-abc"));
  CHECK(std::count_if(env.begin(), env.end(),
                      [](const std::string& e) { return e.rfind("TMPDIR=", 0) == 0; }) == 1);
  CHECK_FALSE(holds(env, "=no name"));
  CHECK_FALSE(holds(env, "no equals sign"));
}
