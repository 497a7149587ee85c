// The engine and request functions of the C API (continuous batching, genai/engine).
#include <mutex>
#include <unordered_map>

#include "api/c_api_guard.h"
#include "api/handles.h"
#include "genai/engine/engine.h"

namespace onnxllm::api {
namespace {

struct EngineData;

struct RequestData {
  std::shared_ptr<genai::Request> request;
  EngineData* engine = nullptr;  // set while the request is in an engine
};

// Maps the engine's requests back to their handles, so that Step returns the caller's own handle.
struct EngineData {
  std::unique_ptr<genai::Engine> engine;
  std::unordered_map<const genai::Request*, RequestData*> handles;
};

// Guards every EngineData::handles and RequestData::engine (engines and requests are few and their
// calls cheap next to a step, which runs without it).
std::mutex registry_mutex;

EngineData& engine_of(OgaEngine* engine, const char* function) {
  return require(handle<EngineData>(engine), function, "engine");
}
RequestData& request_of(OgaRequest* request, const char* function) {
  return require(handle<RequestData>(request), function, "request");
}
const RequestData& request_of(const OgaRequest* request, const char* function) {
  return require(handle<RequestData>(request), function, "request");
}

// The one row of a request's tokens.
const std::vector<int32_t>& one_sequence(const OgaSequences* tokens, const char* function) {
  const auto& seqs = require(handle<SequencesData>(tokens), function, "tokens");
  if (seqs.rows.size() != 1)
    throw_error(ErrorCode::kInvalidArgument, function, ": a request takes one sequence, got ", seqs.rows.size());
  return seqs.rows[0];
}

}  // namespace
}  // namespace onnxllm::api

using namespace onnxllm::api;
using onnxllm::ErrorCode;
using onnxllm::throw_error;

extern "C" {

OgaResult* OGA_API_CALL OgaCreateEngine(OgaModel* model, OgaEngine** out) {
  return guard("OgaCreateEngine", [&] {
    require_out(out, "OgaCreateEngine", "out");
    *out = nullptr;
    const auto& m = require(handle<ModelData>(model), "OgaCreateEngine", "model");
    auto data = std::make_unique<EngineData>();
    data->engine = std::make_unique<onnxllm::genai::Engine>(m.model);
    *out = opaque<OgaEngine>(data.release());
  });
}

void OGA_API_CALL OgaDestroyEngine(OgaEngine* engine) {
  auto* data = handle<EngineData>(engine);
  if (!data) return;
  {
    std::lock_guard lock(registry_mutex);
    for (auto& [request, h] : data->handles) h->engine = nullptr;
  }
  delete data;
}

OgaResult* OGA_API_CALL OgaEngineStep(OgaEngine* engine, OgaRequest** request) {
  return guard("OgaEngineStep", [&] {
    require_out(request, "OgaEngineStep", "request");
    *request = nullptr;
    EngineData& e = engine_of(engine, "OgaEngineStep");
    // A request whose handle was destroyed meanwhile is skipped.
    while (auto ready = e.engine->step()) {
      std::lock_guard lock(registry_mutex);
      auto it = e.handles.find(ready.get());
      if (it == e.handles.end()) continue;
      *request = opaque<OgaRequest>(it->second);
      return;
    }
  });
}

OgaResult* OGA_API_CALL OgaEngineHasPendingRequests(OgaEngine* engine, bool* out) {
  return guard("OgaEngineHasPendingRequests", [&] {
    require_out(out, "OgaEngineHasPendingRequests", "out");
    *out = engine_of(engine, "OgaEngineHasPendingRequests").engine->has_pending_requests();
  });
}

OgaResult* OGA_API_CALL OgaEngineAddRequest(OgaEngine* engine, OgaRequest* request) {
  return guard("OgaEngineAddRequest", [&] {
    EngineData& e = engine_of(engine, "OgaEngineAddRequest");
    RequestData& r = request_of(request, "OgaEngineAddRequest");
    std::lock_guard lock(registry_mutex);
    e.engine->add_request(r.request);
    e.handles[r.request.get()] = &r;
    r.engine = &e;
  });
}

OgaResult* OGA_API_CALL OgaEngineRemoveRequest(OgaEngine* engine, OgaRequest* request) {
  return guard("OgaEngineRemoveRequest", [&] {
    EngineData& e = engine_of(engine, "OgaEngineRemoveRequest");
    RequestData& r = request_of(request, "OgaEngineRemoveRequest");
    std::lock_guard lock(registry_mutex);
    if (r.engine != &e) throw_error(ErrorCode::kInvalidArgument, "OgaEngineRemoveRequest: the request is not in this engine");
    e.engine->remove_request(*r.request);
    e.handles.erase(r.request.get());
    r.engine = nullptr;
  });
}

OgaResult* OGA_API_CALL OgaCreateRequest(OgaGeneratorParams* params, OgaRequest** out) {
  return guard("OgaCreateRequest", [&] {
    require_out(out, "OgaCreateRequest", "out");
    *out = nullptr;
    const auto& p = require(handle<GeneratorParamsData>(params), "OgaCreateRequest", "params");
    auto data = std::make_unique<RequestData>();
    data->request = std::make_shared<onnxllm::genai::Request>(p.params);
    *out = opaque<OgaRequest>(data.release());
  });
}

void OGA_API_CALL OgaDestroyRequest(OgaRequest* request) {
  auto* data = handle<RequestData>(request);
  if (!data) return;
  {
    // An abandoned request leaves its engine at the next step boundary.
    std::lock_guard lock(registry_mutex);
    if (data->engine) {
      data->engine->engine->remove_request(*data->request);
      data->engine->handles.erase(data->request.get());
    }
  }
  delete data;
}

OgaResult* OGA_API_CALL OgaRequestAddTokens(OgaRequest* request, const OgaSequences* tokens) {
  return guard("OgaRequestAddTokens", [&] {
    request_of(request, "OgaRequestAddTokens").request->add_tokens(one_sequence(tokens, "OgaRequestAddTokens"));
  });
}

OgaResult* OGA_API_CALL OgaRequestContinue(OgaRequest* request, const OgaSequences* tokens) {
  return guard("OgaRequestContinue", [&] {
    request_of(request, "OgaRequestContinue").request->continue_with(one_sequence(tokens, "OgaRequestContinue"));
  });
}

OgaResult* OGA_API_CALL OgaRequestSetOpaqueData(OgaRequest* request, void* opaque_data) {
  return guard("OgaRequestSetOpaqueData",
               [&] { request_of(request, "OgaRequestSetOpaqueData").request->set_opaque_data(opaque_data); });
}

OgaResult* OGA_API_CALL OgaRequestGetOpaqueData(OgaRequest* request, void** opaque_data) {
  return guard("OgaRequestGetOpaqueData", [&] {
    require_out(opaque_data, "OgaRequestGetOpaqueData", "opaque_data");
    *opaque_data = request_of(request, "OgaRequestGetOpaqueData").request->opaque_data();
  });
}

OgaResult* OGA_API_CALL OgaRequestHasUnseenTokens(const OgaRequest* request, bool* out) {
  return guard("OgaRequestHasUnseenTokens", [&] {
    require_out(out, "OgaRequestHasUnseenTokens", "out");
    *out = request_of(request, "OgaRequestHasUnseenTokens").request->has_unseen_tokens();
  });
}

OgaResult* OGA_API_CALL OgaRequestGetUnseenToken(OgaRequest* request, int32_t* out) {
  return guard("OgaRequestGetUnseenToken", [&] {
    require_out(out, "OgaRequestGetUnseenToken", "out");
    *out = request_of(request, "OgaRequestGetUnseenToken").request->get_unseen_token();
  });
}

OgaResult* OGA_API_CALL OgaRequestIsDone(const OgaRequest* request, bool* out) {
  return guard("OgaRequestIsDone", [&] {
    require_out(out, "OgaRequestIsDone", "out");
    *out = request_of(request, "OgaRequestIsDone").request->is_done();
  });
}

OgaResult* OGA_API_CALL OgaRequestIsTurnComplete(const OgaRequest* request, bool* out) {
  return guard("OgaRequestIsTurnComplete", [&] {
    require_out(out, "OgaRequestIsTurnComplete", "out");
    *out = request_of(request, "OgaRequestIsTurnComplete").request->is_turn_complete();
  });
}

}  // extern "C"
