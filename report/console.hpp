#pragma once

// The terminal a campaign talks to. On a terminal, progress is a block of lines at the bottom
// of stderr that is redrawn in place; every other line a campaign prints (a result, a
// warning) must go through here, so that it is written above the block (the block is erased,
// the line written, the block drawn again) instead of through it. Off a terminal there is no
// block: lines are written as they come. Thread-safe: actors on any thread call it.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ks::report::console {

/// Names the stream a line goes to.
enum class stream { out, err };

/// Writes `text` and a newline to `to`, above the live block when one is shown.
void line(stream to, std::string_view text);

/// Checks whether stderr is a terminal: the only place a live block is drawn.
bool live();

/// Returns the terminal's height in lines (24 when it cannot be read).
int64_t height();

/// Replaces the live block with `lines` (each cut to the terminal's width); does nothing when
/// stderr is not a terminal.
void show(const std::vector<std::string>& lines);

/// Erases the live block; lines written afterwards stay where they are.
void clear();

} // namespace ks::report::console
