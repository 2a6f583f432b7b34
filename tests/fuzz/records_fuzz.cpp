// libFuzzer target: a value read back from a store (memory/record_codec.cpp, record_seal.cpp),
// as every decoder of the campaign store reads one, sealed or not, and as `inspect` describes
// it. Run by run_fuzzer.sh (ctest "fuzz: records"). A damaged value is an error string, never
// a signal; a record that decodes encodes to a text that decodes again; any bytes written as a
// source or a message read back.

#include "memory/record_codec.hpp"
#include "memory/record_seal.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace records = ks::memory::records;
namespace seal = ks::memory::seal;

namespace {

// Decodes `value` as `decode` does, and checks that what decodes survives a round trip.
template <class Decode>
void round_trip(std::string_view value, Decode decode) {
  auto first = decode(value);
  if (!first)
    return;
  if constexpr (requires { records::encode(*first); }) {
    if (!decode(records::encode(*first)))
      __builtin_trap();
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view value(reinterpret_cast<const char*>(data), size);
  for (seal::rule r : {seal::rule::required, seal::rule::optional})
    if (auto opened = seal::open("nodes/relu/1", value, r); opened && opened->checked)
      if (!seal::open("nodes/relu/1", seal::sealed("nodes/relu/1", opened->body), r))
        __builtin_trap();
  (void)records::decode_store_header(value);
  round_trip(value, records::decode_campaign);
  round_trip(value, records::decode_task);
  round_trip(value, records::decode_node);
  round_trip(value, records::decode_detail);
  (void)records::decode_source(value);
  round_trip(value, records::decode_outcome);
  round_trip(value, records::decode_repair);
  (void)records::decode_calibration(value);
  round_trip(value, records::decode_skill_stat);
  (void)records::decode_transcript(value);
  (void)records::summarize(value);
  (void)records::parse_node_key(value);
  (void)records::parse_number_key(value);
  // Whatever bytes a source or a message holds (not UTF-8 too), its record reads back: the
  // source exactly, the message with each byte that is not UTF-8 as U+FFFD.
  auto source = records::decode_source(records::encode_source(value));
  if (!source || *source != value)
    __builtin_trap();
  ks::memory::node_detail detail;
  detail.message = std::string(value);
  detail.diagnostics = std::string(value);
  if (!records::decode_detail(records::encode(detail)))
    __builtin_trap();
  return 0;
}
