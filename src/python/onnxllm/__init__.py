"""onnxllm: run onnxruntime-genai model folders with onnxllm's own engine.

A drop-in for ``onnxruntime_genai`` for text generation: scripts written for it run with
``import onnxllm as og``. The classes come from the extension ``onnxllm._onnxllm`` (bound to
libonnxllm.so's C API); what onnxllm does not have yet (images, audio, multimodal processors,
adapters, multi-token-prediction heads, streaming audio, GPU providers) exists under the same
names and raises NotImplementedError when used.
"""

from ._onnxllm import (  # noqa: F401  (re-exported)
    Config,
    Engine,
    Generator,
    GeneratorParams,
    Model,
    NamedTensors,
    Request,
    Tensor,
    Tokenizer,
    TokenizerStream,
    __version__,
    get_current_gpu_device_id,
    register_execution_provider_library,
    set_current_gpu_device_id,
    set_log_options,
    unregister_execution_provider_library,
)


def _not_supported(what):
    return NotImplementedError(f"{what} is not supported by onnxllm {__version__} (text generation on CPU only)")


class _Unsupported:
    """A name onnxruntime_genai has for a feature onnxllm does not have yet."""

    _what = ""

    def __init__(self, *args, **kwargs):
        raise _not_supported(self._what)


class _UnsupportedMedia(_Unsupported):
    @classmethod
    def open(cls, *paths):
        raise _not_supported(cls._what)

    @classmethod
    def open_bytes(cls, *data):
        raise _not_supported(cls._what)


def _unsupported_class(name, what, base=_Unsupported):
    return type(name, (base,), {"_what": what, "__doc__": f"{what}: not supported by onnxllm yet."})


Images = _unsupported_class("Images", "Images (vision inputs)", _UnsupportedMedia)
Audios = _unsupported_class("Audios", "Audios (audio inputs)", _UnsupportedMedia)
MultiModalProcessor = _unsupported_class("MultiModalProcessor", "MultiModalProcessor")
Adapters = _unsupported_class("Adapters", "Adapters (LoRA)")
MtpGenerator = _unsupported_class("MtpGenerator", "MtpGenerator (multi-token-prediction heads)")
StreamingProcessor = _unsupported_class("StreamingProcessor", "StreamingProcessor (streaming audio)")


def _model_create_multimodal_processor(self):
    raise _not_supported(MultiModalProcessor._what)


def _model_create_streaming_processor(self):
    raise _not_supported(StreamingProcessor._what)


def _generator_set_active_adapter(self, adapters, adapter_name):
    raise _not_supported(Adapters._what)


Model.create_multimodal_processor = _model_create_multimodal_processor
Model.create_streaming_processor = _model_create_streaming_processor
Generator.set_active_adapter = _generator_set_active_adapter


def set_log_callback(callback):
    """Only None (the default, log to stderr) is supported."""
    if callback is not None:
        raise _not_supported("set_log_callback with a callback")


def enable_telemetry_events():
    """onnxllm sends no telemetry: nothing to enable."""


def disable_telemetry_events():
    """onnxllm sends no telemetry: nothing to disable."""


# Only the CPU provider is built in.
def is_cuda_available():
    return False


def is_dml_available():
    return False


def is_rocm_available():
    return False


def is_webgpu_available():
    return False


def is_qnn_available():
    return False


def is_openvino_available():
    return False
