#pragma once

// A transcript: one model request as it went, kept in the output folder so that a person can
// read what each role was told and answered, and the replay client can answer a later run the
// same way. One JSON file per request, written to a temporary name and renamed:
//
//   <dir>/<task>/<id, 6 digits>-<role>[-node<N>].json     (<task> "_campaign" for none)
//
//   { "v": 1, "type": "llm_transcript", "id": int, "role": str, "task": str, "node": int,
//     "api": "openai" | "anthropic" | "replay", "model": str, "endpoint": str,
//     "started_at": ISO 8601 UTC, "latency_ms": real,
//     "attempts": [ { "status": int (0: no HTTP answer), "error": str, "ms": real,
//                     "retry_after_s": real (-1: none) } ],
//     "outcome": "ok" | "failed" | "cancelled" | "refused",
//     "error": str, "messages": [ { "role": str, "content": str } ],
//     "reply": str, "finish_reason": str, "input_tokens": int, "output_tokens": int,
//     "cost": real, "truncated": true (only when the texts were cut) }
//
// A transcript is at most about max_transcript_bytes: when its messages, reply and error are
// longer together, each one longer than its share is cut, saying how much was cut.
//
// Ids number the requests of a campaign's output folder: a service starts after the highest
// id its folder already holds (next_transcript_id), so that a resumed campaign adds files
// rather than replacing the earlier run's.
//
// The same text is kept in the campaign's store (memory/store.hpp, `kernelskill inspect`):
// the service hands it to its caller with each outcome (model_service.hpp).
//
// Secrets: no header is ever recorded, and every string is redacted of the API key before it
// is written (an endpoint that echoes the key in an error would otherwise leak it).

#include "agents/model_protocol.hpp"
#include "engine/error.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace ks::agents {

/// The most bytes the messages, reply and error of one transcript hold together (see the top).
inline constexpr size_t max_transcript_bytes = size_t{8} * 1024 * 1024;

/// One HTTP attempt of a request.
struct attempt_record {
  long status = 0;           ///< the HTTP status; 0 when no answer came (dropped, timed out)
  std::string error;         ///< why it did not succeed; empty when it did
  double ms = 0;             ///< how long it took
  double retry_after_s = -1; ///< what the endpoint asked to wait; -1: nothing

  friend bool operator==(const attempt_record&, const attempt_record&) = default;
};

/// One request as it went.
struct transcript {
  int64_t id = 0;
  std::string role;
  std::string task;
  int64_t node = -1;
  std::string api;
  std::string model;
  std::string endpoint;
  std::string started_at;
  double latency_ms = 0;
  std::vector<attempt_record> attempts;
  std::string outcome = "ok"; ///< "ok", "failed", "cancelled", "refused" (a budget)
  std::string error;
  std::vector<chat_message> messages;
  std::string reply;
  std::string finish_reason;
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  double cost = 0;
};

/// Returns `text` with every occurrence of `secret` replaced by "[redacted]"; `text` as it is
/// when `secret` is empty.
std::string redact(std::string_view text, std::string_view secret);

/// Returns `t` as its JSON text, every string redacted of `secret`.
std::string transcript_json(const transcript& t, std::string_view secret);

/// Reads a transcript's JSON text; fails with invalid_input naming what is malformed.
[[nodiscard]] engine::expected<transcript> parse_transcript(std::string_view text);

/// Returns the path of `t` under `dir` (see the top of the file).
std::filesystem::path transcript_path(const std::filesystem::path& dir, const transcript& t);

/// Writes `t` under `dir` (creating its folder), redacted of `secret`; returns its path.
[[nodiscard]] engine::expected<std::filesystem::path>
write_transcript(const std::filesystem::path& dir, const transcript& t, std::string_view secret);

/// Writes `json_text`, transcript_json of `t`, to t's path under `dir` (creating its folder);
/// returns the path.
[[nodiscard]] engine::expected<std::filesystem::path>
write_transcript_text(const std::filesystem::path& dir, const transcript& t,
                      std::string_view json_text);

/// Returns the id after the highest of the transcript files under `dir` (1 when there is none,
/// or no folder): where a service writing there starts numbering.
int64_t next_transcript_id(const std::filesystem::path& dir);

/// Reads every transcript under `dir`, by id; a file that is not one is an error naming it.
[[nodiscard]] engine::expected<std::vector<transcript>>
read_transcripts(const std::filesystem::path& dir);

} // namespace ks::agents
