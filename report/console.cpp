#include "report/console.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <mutex>
#include <string>

namespace ks::report::console {

namespace {

std::mutex guard;
int64_t shown = 0; // lines of the live block on the screen now
std::string block; // the block as last drawn, to draw again below a new line

bool is_terminal(int fd) {
  return ::isatty(fd) == 1;
}

size_t columns() {
  winsize size{};
  if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0)
    return size.ws_col;
  return 80;
}

size_t rows() {
  winsize size{};
  if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_row > 0)
    return size.ws_row;
  return 24;
}

// Erases the block: up to its first line ("ESC [ n F"), then to the end of the screen.
void erase_locked() {
  if (shown == 0)
    return;
  std::cerr << "\x1b[" << shown << "F\x1b[J" << std::flush;
  shown = 0;
}

} // namespace

bool live() {
  static const bool terminal = is_terminal(STDERR_FILENO);
  return terminal;
}

void line(stream to, std::string_view text) {
  std::lock_guard<std::mutex> lock(guard);
  // stdout shares the screen with the block only when it is a terminal too.
  static const bool stdout_on_screen = is_terminal(STDOUT_FILENO);
  bool above_block = shown > 0 && (to == stream::err || stdout_on_screen);
  int64_t block_lines = shown;
  if (above_block)
    erase_locked();
  std::ostream& out = to == stream::out ? std::cout : std::cerr;
  out << text << '\n' << std::flush;
  if (above_block) {
    std::cerr << block << std::flush;
    shown = block_lines;
  }
}

int64_t height() {
  return static_cast<int64_t>(rows());
}

void show(const std::vector<std::string>& lines) {
  if (!live())
    return;
  std::lock_guard<std::mutex> lock(guard);
  erase_locked();
  // A line wider than the screen would wrap and a block taller than it would scroll: either
  // breaks the count of lines to erase next time.
  size_t width = columns() > 1 ? columns() - 1 : 1;
  size_t room = rows() > 2 ? rows() - 2 : 1;
  std::string text;
  int64_t count = 0;
  for (const std::string& l : lines) {
    if (static_cast<size_t>(count) == room)
      break;
    text += l.size() > width ? l.substr(0, width) : l;
    text += '\n';
    ++count;
  }
  std::cerr << text << std::flush;
  shown = count;
  block = std::move(text);
}

void clear() {
  std::lock_guard<std::mutex> lock(guard);
  erase_locked();
  block.clear();
}

} // namespace ks::report::console
