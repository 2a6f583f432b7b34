#include "fake_model_server.hpp"

#include <arpa/inet.h>
#include <boost/json.hpp>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <regex>
#include <sstream>
#include <thread>

namespace ks::test {

namespace json = boost::json;
using agents::api_kind;

// -- bodies ------------------------------------------------------------------------------------

std::string chat_body(api_kind api, const std::string& text, int64_t input, int64_t output,
                      const std::string& model) {
  json::object o;
  o["model"] = model;
  if (api == api_kind::openai) {
    o["id"] = "chatcmpl-fake";
    o["object"] = "chat.completion";
    o["choices"] = json::array{
        json::object{{"index", 0},
                     {"message", json::object{{"role", "assistant"}, {"content", text}}},
                     {"finish_reason", "stop"}}};
    o["usage"] = json::object{
        {"prompt_tokens", input}, {"completion_tokens", output}, {"total_tokens", input + output}};
  } else {
    o["id"] = "msg_fake";
    o["type"] = "message";
    o["role"] = "assistant";
    o["content"] = json::array{json::object{{"type", "text"}, {"text", text}}};
    o["stop_reason"] = "end_turn";
    o["usage"] = json::object{{"input_tokens", input}, {"output_tokens", output}};
  }
  return json::serialize(o);
}

namespace {

std::string error_body(const std::string& message) {
  return json::serialize(json::object{{"error", json::object{{"message", message}}}});
}

struct prompt_parts {
  std::string system;
  std::string first_user;
  int64_t user_turns = 0;
};

prompt_parts parts_of(api_kind api, const std::string& body) {
  prompt_parts out;
  boost::system::error_code ec;
  json::value v = json::parse(body, ec);
  if (ec || !v.is_object())
    return out;
  const json::object& o = v.as_object();
  if (api == api_kind::anthropic)
    if (const json::value* s = o.if_contains("system"); s != nullptr && s->is_string())
      out.system = std::string(s->as_string());
  const json::value* messages = o.if_contains("messages");
  if (messages == nullptr || !messages->is_array())
    return out;
  for (const json::value& m : messages->as_array()) {
    if (!m.is_object())
      continue;
    const json::value* role = m.as_object().if_contains("role");
    const json::value* content = m.as_object().if_contains("content");
    if (role == nullptr || content == nullptr || !role->is_string() || !content->is_string())
      continue;
    if (role->as_string() == "system")
      out.system = std::string(content->as_string());
    else if (role->as_string() == "user") {
      if (out.user_turns++ == 0)
        out.first_user = std::string(content->as_string());
    }
  }
  return out;
}

/// Returns the fenced block that follows `heading` in `text`; empty when none.
std::string block_after(const std::string& text, const std::string& heading) {
  size_t at = text.find(heading);
  if (at == std::string::npos)
    return {};
  size_t open = text.find("```", at);
  if (open == std::string::npos)
    return {};
  size_t start = text.find('\n', open);
  size_t close = text.find("\n```", start);
  if (start == std::string::npos || close == std::string::npos)
    return {};
  return text.substr(start + 1, close - start);
}

std::string role_of(const std::string& system) {
  std::smatch m;
  static const std::regex pattern("You are the ([a-z]+) of");
  return std::regex_search(system, m, pattern) ? m[1].str() : std::string();
}

/// The overridable macros of a source: `#ifndef NAME` followed by `#define NAME VALUE`.
std::vector<std::pair<std::string, int64_t>> macros_of(const std::string& source) {
  std::vector<std::pair<std::string, int64_t>> out;
  static const std::regex pattern("#ifndef (KS_[A-Z0-9_]+)\\s*\\n#define \\1 ([0-9]+)");
  for (auto it = std::sregex_iterator(source.begin(), source.end(), pattern);
       it != std::sregex_iterator(); ++it)
    out.emplace_back((*it)[1].str(), std::stoll((*it)[2].str()));
  return out;
}

std::string planner_reply(const std::string& prompt) {
  std::smatch m;
  int64_t count = 1;
  static const std::regex wanted("Propose up to ([0-9]+) distinct plans");
  if (std::regex_search(prompt, m, wanted))
    count = std::stoll(m[1].str());
  std::string source = block_after(prompt, "## The kernel to improve");
  json::array plans;
  for (const auto& [name, value] : macros_of(source)) {
    std::vector<int64_t> candidates = {value / 2, value * 2, value / 4, value * 4};
    for (int64_t v : candidates) {
      if (static_cast<int64_t>(plans.size()) >= count)
        break;
      if (v <= 0 || (name.find("THREADS") != std::string::npos && (v < 32 || v > 1024)))
        continue;
      std::string key = name + "=" + std::to_string(v);
      if (prompt.find(key) != std::string::npos)
        continue; // tried already, or the lineage's
      plans.push_back(json::object{{"skill", "custom"},
                                   {"params", json::object{{name, v}, {"idea", "macro"}}},
                                   {"description", "set " + name + " to " + std::to_string(v)}});
    }
  }
  return "Here are my plans.\n```json\n" + json::serialize(json::object{{"plans", plans}}) +
         "\n```\n";
}

std::string with_macro(std::string source, const std::string& name, const std::string& value) {
  std::regex pattern("#define " + name + " [0-9]+");
  return std::regex_replace(source, pattern, "#define " + name + " " + value,
                            std::regex_constants::format_first_only);
}

std::string coder_reply(const std::string& prompt, bool broken) {
  std::string source = block_after(prompt, "## The kernel to change");
  std::smatch m;
  static const std::regex key("(KS_[A-Z0-9_]+)=([0-9]+)");
  std::string plan_line = prompt.substr(0, prompt.find("## The kernel to change"));
  if (std::regex_search(plan_line, m, key))
    source = with_macro(source, m[1].str(), m[2].str());
  else
    source = "// a change\n" + source;
  if (broken)
    source = "// KS_FAKE_COMPILE_ERROR: a typo the compiler rejects\n" + source;
  return "I changed the launch parameter.\n```cuda\n" + source + "```\n";
}

std::string repairer_reply(const std::string& prompt) {
  std::string source = block_after(prompt, "## A candidate that failed");
  std::istringstream in(source);
  std::string fixed;
  bool changed = false;
  for (std::string line; std::getline(in, line);) {
    if (line.find("KS_FAKE_COMPILE_ERROR") != std::string::npos) {
      changed = true;
      continue;
    }
    fixed += line + "\n";
  }
  if (!changed)
    return "```json\n{\"diagnosis\": \"I cannot see the fault\", \"fix_summary\": \"\", "
           "\"give_up\": true}\n```\n";
  return "```json\n{\"diagnosis\": \"a stray identifier the compiler does not know\", "
         "\"fix_summary\": \"removed the line naming KS_FAKE_COMPILE_ERROR\"}\n```\n```cuda\n" +
         fixed + "```\n";
}

std::string distiller_reply(const std::string& prompt) {
  std::smatch m;
  static const std::regex task("## Task: [a-z0-9_]+ \\(([a-z_]+)\\)");
  std::string family = std::regex_search(prompt, m, task) ? m[1].str() : "elementwise";
  std::string winner = block_after(prompt, "The winning kernel:");
  auto macros = macros_of(winner);
  std::string param = macros.empty() ? "KS_BLOCK_THREADS" : macros.front().first;
  int64_t value = macros.empty() ? 128 : macros.front().second;
  std::string text = std::regex_replace(winner, std::regex("#define " + param + " [0-9]+"),
                                        "#define " + param + " {{threads}}",
                                        std::regex_constants::format_first_only);
  std::ostringstream toml;
  toml << "id = \"learned_" << family << "_launch\"\n"
       << "title = \"the launch shape that won on " << family << "\"\n"
       << "version = 1\nfamilies = [\"" << family << "\"]\naddresses = []\nprior = 0.6\n"
       << "guidance = \"\"\"\nUse the block size that won; keep the rest of the kernel.\n\"\"\"\n"
       << "anti_patterns = [\"changing the arithmetic\"]\n"
       << "effect = \"the winner's speedup on similar shapes\"\n\n"
       << "[[templates]]\nname = \"winner\"\nfile = \"kernel.cu.mustache\"\n"
       << "params = [ { name = \"threads\", values = [" << value << "], default = " << value
       << " } ]\n";
  return "```toml\n" + toml.str() + "```\n```cuda\n" + text + "```\n";
}

} // namespace

std::pair<std::string, std::string> prompt_of(api_kind api, const std::string& body) {
  prompt_parts p = parts_of(api, body);
  return {p.first_user, p.system};
}

scripted_reply plausible_reply(api_kind api, const received_request& request,
                               const std::string& fault) {
  scripted_reply r;
  if (fault == "429") {
    r.status = 429;
    r.headers.emplace_back("Retry-After", "0");
    r.body = error_body("rate limited: slow down");
    return r;
  }
  if (fault == "401") {
    r.status = 401;
    r.body = error_body("invalid api key");
    return r;
  }
  if (fault == "500") {
    r.status = 500;
    r.body = error_body("internal server error");
    return r;
  }
  if (fault == "drop") {
    r.drop = true;
    return r;
  }
  if (fault == "malformed") {
    r.body = "{\"choices\": [ this is not JSON";
    return r;
  }
  prompt_parts p = parts_of(api, request.body);
  std::string role = role_of(p.system);
  std::string text;
  if (fault == "nocode")
    text = "I would make it faster, but I will not say how.";
  else if (role == "planner")
    text = planner_reply(p.first_user);
  else if (role == "coder")
    text = coder_reply(p.first_user, fault == "broken");
  else if (role == "repairer")
    text = repairer_reply(p.first_user);
  else if (role == "distiller")
    text = distiller_reply(p.first_user);
  else
    text = "Hello.";
  int64_t input = static_cast<int64_t>(request.body.size() / 4);
  int64_t output = static_cast<int64_t>(text.size() / 4) + 1;
  r.body = chat_body(api, text, input, output);
  if (fault == "slow")
    r.delay_s = -1; // the server's slow_s
  return r;
}

std::map<int64_t, std::string> parse_faults(const std::string& spec) {
  std::map<int64_t, std::string> out;
  std::istringstream in(spec);
  for (std::string item; std::getline(in, item, ',');) {
    size_t colon = item.find(':');
    if (colon == std::string::npos)
      continue;
    try {
      out[std::stoll(item.substr(0, colon))] = item.substr(colon + 1);
    } catch (...) {
    }
  }
  return out;
}

// -- the server --------------------------------------------------------------------------------

struct fake_model_server::threads {
  std::thread acceptor;
  std::vector<std::thread> connections;
};

fake_model_server::fake_model_server(api_kind api, uint16_t port)
  : api_(api), threads_(std::make_unique<threads>()) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int yes = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(port);
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::listen(listen_fd_, 128) != 0)
    throw std::runtime_error(std::string("fake_model_server: cannot listen: ") +
                             std::strerror(errno));
  socklen_t length = sizeof address;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&address), &length);
  port_ = ntohs(address.sin_port);
  threads_->acceptor = std::thread([this] { accept_loop(); });
}

fake_model_server::~fake_model_server() {
  stopping_ = true;
  ::shutdown(listen_fd_, SHUT_RDWR);
  ::close(listen_fd_);
  threads_->acceptor.join();
  {
    std::lock_guard lock(mutex_);
    for (int fd : client_fds_)
      ::shutdown(fd, SHUT_RDWR);
  }
  for (std::thread& t : threads_->connections)
    t.join();
}

std::string fake_model_server::endpoint() const {
  return "http://127.0.0.1:" + std::to_string(port_) + "/v1";
}

void fake_model_server::push(scripted_reply reply) {
  std::lock_guard lock(mutex_);
  script_.push_back(std::move(reply));
}

void fake_model_server::set_responder(responder r) {
  std::lock_guard lock(mutex_);
  responder_ = std::move(r);
}

void fake_model_server::set_faults(const std::string& spec) {
  std::lock_guard lock(mutex_);
  faults_ = parse_faults(spec);
}

void fake_model_server::set_slow_s(double seconds) {
  std::lock_guard lock(mutex_);
  slow_s_ = seconds;
}

std::vector<received_request> fake_model_server::requests() const {
  std::lock_guard lock(mutex_);
  return received_;
}

std::vector<scripted_reply> fake_model_server::replies() const {
  std::lock_guard lock(mutex_);
  return sent_;
}

std::pair<int64_t, int64_t> fake_model_server::tokens_sent() const {
  std::lock_guard lock(mutex_);
  int64_t input = 0;
  int64_t output = 0;
  for (const scripted_reply& r : sent_) {
    // A delayed answer is one the tests make slower than the client's deadline: abandoned.
    if (r.drop || r.status != 200 || r.delay_s > 0)
      continue;
    auto parsed = agents::parse_model_reply(api_, r.body);
    if (!parsed)
      continue;
    input += parsed->input_tokens;
    output += parsed->output_tokens;
  }
  return {input, output};
}

void fake_model_server::accept_loop() {
  while (!stopping_) {
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (stopping_)
        return;
      continue;
    }
    std::lock_guard lock(mutex_);
    if (stopping_) {
      ::close(fd);
      return;
    }
    client_fds_.push_back(fd);
    threads_->connections.emplace_back([this, fd] { serve(fd); });
  }
}

scripted_reply fake_model_server::answer(const received_request& r) {
  responder respond;
  std::string fault;
  double slow = 0;
  {
    std::lock_guard lock(mutex_);
    if (!script_.empty()) {
      scripted_reply s = std::move(script_.front());
      script_.erase(script_.begin());
      return s;
    }
    respond = responder_;
    auto f = faults_.find(r.number);
    if (f != faults_.end())
      fault = f->second;
    slow = slow_s_;
  }
  if (respond)
    return respond(r);
  scripted_reply s = plausible_reply(api_, r, fault);
  if (s.delay_s < 0)
    s.delay_s = slow;
  return s;
}

namespace {

bool send_all(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0)
      return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

const char* reason_of(int status) {
  switch (status) {
  case 200:
    return "OK";
  case 400:
    return "Bad Request";
  case 401:
    return "Unauthorized";
  case 429:
    return "Too Many Requests";
  case 500:
    return "Internal Server Error";
  case 503:
    return "Service Unavailable";
  default:
    return "Status";
  }
}

} // namespace

void fake_model_server::close_client(int fd) {
  // Forgotten before it is closed: the destructor must never shut down a number the system
  // has given to another socket since (the client's own, in this process).
  std::lock_guard lock(mutex_);
  client_fds_.erase(std::remove(client_fds_.begin(), client_fds_.end(), fd), client_fds_.end());
  ::close(fd);
}

void fake_model_server::serve(int fd) {
  std::string buffer;
  char chunk[65536];
  while (!stopping_) {
    size_t end = buffer.find("\r\n\r\n");
    while (end == std::string::npos) {
      ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
      if (n <= 0) {
        close_client(fd);
        return;
      }
      buffer.append(chunk, static_cast<size_t>(n));
      end = buffer.find("\r\n\r\n");
    }
    received_request r;
    std::istringstream head(buffer.substr(0, end));
    std::string line;
    std::getline(head, line);
    std::istringstream request_line(line);
    request_line >> r.method >> r.path;
    size_t length = 0;
    while (std::getline(head, line)) {
      if (!line.empty() && line.back() == '\r')
        line.pop_back();
      size_t colon = line.find(':');
      if (colon == std::string::npos)
        continue;
      std::string name = line.substr(0, colon);
      for (char& c : name)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      std::string value = line.substr(colon + 1);
      value.erase(0, value.find_first_not_of(' '));
      r.headers[name] = value;
      if (name == "content-length")
        length = static_cast<size_t>(std::stoull(value));
    }
    buffer.erase(0, end + 4);
    while (buffer.size() < length) {
      ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
      if (n <= 0) {
        close_client(fd);
        return;
      }
      buffer.append(chunk, static_cast<size_t>(n));
    }
    r.body = buffer.substr(0, length);
    buffer.erase(0, length);
    {
      std::lock_guard lock(mutex_);
      r.number = next_number_++;
      received_.push_back(r);
    }
    int64_t now = ++concurrent_;
    int64_t seen = max_concurrent_.load();
    while (now > seen && !max_concurrent_.compare_exchange_weak(seen, now)) {
    }
    scripted_reply reply = answer(r);
    auto until = std::chrono::steady_clock::now() +
                 std::chrono::milliseconds(static_cast<int64_t>(1000 * reply.delay_s));
    while (!stopping_ && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    --concurrent_;
    {
      std::lock_guard lock(mutex_);
      sent_.push_back(reply);
    }
    if (reply.drop || stopping_) {
      ::shutdown(fd, SHUT_RDWR);
      close_client(fd);
      return;
    }
    std::string response = "HTTP/1.1 " + std::to_string(reply.status) + " " +
                           reason_of(reply.status) +
                           "\r\nContent-Type: application/json\r\nContent-Length: " +
                           std::to_string(reply.body.size()) + "\r\n";
    for (const auto& [name, value] : reply.headers)
      response += name + ": " + value + "\r\n";
    response += "\r\n" + reply.body;
    if (!send_all(fd, response)) {
      close_client(fd);
      return;
    }
  }
  close_client(fd);
}

} // namespace ks::test
