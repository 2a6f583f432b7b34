#include "engine/candidate_checks.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace ks::engine;

TEST_CASE("an include of an absolute path, a '..' path or a macro is refused before nvcc runs",
          "[engine][candidate]") {
  // Issue 27: nvcc quoted the planted file in its error, and the repairer sent it to the model.
  auto refused = refused_includes("#include <cuda_runtime.h>\n#include \"/home/me/secret.txt\"\n");
  REQUIRE(refused.has_value());
  CHECK_THAT(*refused, Catch::StartsWith("kernel.cu:2: error: #include \"/home/me/secret.txt\": "
                                         "an absolute path"));
  CHECK(refused_includes("#include <../../etc/passwd>\n").has_value());
  CHECK(refused_includes("#include \"kernelskill/../../../../etc/passwd\"\n").has_value());
  CHECK(refused_includes("#define F \"/etc/passwd\"\n#include F\n").has_value());
  // A directive hidden from a naive reader is still one.
  CHECK(refused_includes("  #  include \"/etc/passwd\"\n").has_value());
  CHECK(refused_includes("#/* a comment */include \"/etc/passwd\"\n").has_value());
  CHECK(refused_includes("#inc\\\nlude \"/etc/pa\\\nsswd\"\n").has_value());
  CHECK(refused_includes("%:include \"/etc/passwd\"\n").has_value());
  CHECK(refused_includes("#include_next </etc/passwd>\n").has_value());
  auto line = refused_includes("int a;\n/* two\n lines */\n#include \"/x\"\n");
  REQUIRE(line.has_value());
  CHECK_THAT(*line, Catch::StartsWith("kernel.cu:4: error:"));
}

TEST_CASE("a candidate's usual includes pass, and text that only looks like one is no include",
          "[engine][candidate]") {
  CHECK(refused_includes("#include <cuda_runtime.h>\n#include \"kernelskill/abi.h\"\n"
                         "#include <cub/block/block_reduce.cuh>\n#include <cstdint>\n") ==
        std::nullopt);
  CHECK(refused_includes("// #include \"/etc/passwd\"\n/* #include \"/etc/passwd\" */\n"
                         "const char* s = \"#include </etc/passwd>\";\n") == std::nullopt);
}

TEST_CASE("a diagnostic about another file reaches a model as its position only",
          "[engine][candidate]") {
  std::string nvcc = "/home/me/secret.txt(1): error: identifier \"hunter2\" is undefined\n"
                     "  hunter2 is my password\n"
                     "  ^\n"
                     "\n"
                     "kernel.cu(12): error: expected a \";\"\n"
                     "    int x = 1\n"
                     "             ^\n"
                     "/etc/hosts:3:1: error: 'localhost' does not name a type\n"
                     "    3 | 127.0.0.1 localhost secret-host\n"
                     "kernel.cu:20:5: warning: unused variable 'y'\n"
                     "2 errors detected in the compilation of \"kernel.cu\".\n";
  std::string own = own_diagnostics(nvcc);
  CHECK(own.find("hunter2") == std::string::npos);
  CHECK(own.find("secret-host") == std::string::npos);
  CHECK_THAT(own, Catch::Contains("/home/me/secret.txt(1): error: [in a file that is not the "
                                  "candidate's: not shown]"));
  CHECK_THAT(own, Catch::Contains("/etc/hosts:3:1: error: [in a file"));
  CHECK_THAT(own, Catch::Contains("kernel.cu(12): error: expected a \";\"\n    int x = 1\n"));
  CHECK_THAT(own, Catch::Contains("kernel.cu:20:5: warning: unused variable 'y'"));
  // A diagnostic of the candidate only is kept whole.
  std::string mine = "kernel.cu(3): error: x\n  code\n  ^\n";
  CHECK(own_diagnostics(mine) == mine);
}
