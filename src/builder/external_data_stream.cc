#include "builder/external_data_stream.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace onnxllm {
namespace {

constexpr uint64_t kAlignment = 64;  // what the loader needs to use data in place for every dtype

}  // namespace

ExternalDataStream::ExternalDataStream(std::filesystem::path path) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ONNXLLM_CHECK(fd_ >= 0, kRuntime, "cannot create ", path_.string(), ": ", std::strerror(errno));
}

ExternalDataStream::~ExternalDataStream() {
  if (fd_ >= 0) ::close(fd_);
}

void ExternalDataStream::write_all(const void* data, size_t bytes) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::write(fd_, p, std::min<size_t>(bytes, size_t{1} << 30));
    if (n < 0 && errno == EINTR) continue;
    ONNXLLM_CHECK(n > 0, kRuntime, "cannot write ", path_.string(), ": ",
                  n < 0 ? std::strerror(errno) : "no progress (is the disk full?)");
    p += n;
    bytes -= static_cast<size_t>(n);
    offset_ += static_cast<uint64_t>(n);
  }
}

void ExternalDataStream::add(const std::string& name, const TensorView& tensor) {
  ONNXLLM_CHECK(fd_ >= 0, kInvalidArgument, "external data stream ", path_.string(), " is already finished");
  for (const auto& e : entries_)
    ONNXLLM_CHECK(e.name != name, kInvalidArgument, "initializer '", name, "' written twice");
  static const char zeros[kAlignment] = {};
  write_all(zeros, static_cast<size_t>((kAlignment - offset_ % kAlignment) % kAlignment));
  entries_.push_back({name, tensor.dtype(), tensor.shape(), offset_});
  write_all(tensor.raw(), tensor.bytes());
}

std::shared_ptr<MappedFile> ExternalDataStream::finish(Graph& graph) {
  ONNXLLM_CHECK(fd_ >= 0, kInvalidArgument, "external data stream ", path_.string(), " is already finished");
  const int fd = fd_;
  fd_ = -1;
  ONNXLLM_CHECK(::close(fd) == 0, kRuntime, "cannot write ", path_.string(), ": ", std::strerror(errno));
  auto file = MappedFile::open(path_);
  ONNXLLM_CHECK(file->size() == offset_, kRuntime, path_.string(), " has ", file->size(), " bytes, expected ", offset_);
  for (const auto& e : entries_) {
    const uint8_t* data = file->data() + e.offset;
    graph.add_initializer(e.name, Initializer{TensorView(data, e.dtype, e.shape), file});
  }
  entries_.clear();
  return file;
}

}  // namespace onnxllm
