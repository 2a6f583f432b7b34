#include "agents/model_service.hpp"

#include <future>
#include <memory>

namespace ks::agents {

engine::expected<model_reply> model_service::complete(const model_request& request) {
  auto promise = std::make_shared<std::promise<engine::expected<model_reply>>>();
  auto outcome = promise->get_future();
  submit(request, [promise](request_outcome o) { promise->set_value(std::move(o.result)); });
  return outcome.get();
}

} // namespace ks::agents
