// Runs one ONNX model on ONNX Runtime (onnxruntime-node, CPU) for differential tests.
// usage: node ort_run.js ORACLE_DIR MODEL.onnx IN.json OUT.json [--threads N]
// IN/OUT: {"tensors": [{"name", "dtype", "dims", "data": base64 of little-endian bytes}]}
const path = require('path');
const fs = require('fs');
const [oracleDir, modelPath, inPath, outPath] = process.argv.slice(2);
const ort = require(path.join(oracleDir, 'node_modules', 'onnxruntime-node'));
const threads = process.argv.includes('--threads') ? +process.argv[process.argv.indexOf('--threads') + 1] : 1;
const arrays = {
  float32: Float32Array, float64: Float64Array, int8: Int8Array, uint8: Uint8Array, int16: Int16Array,
  uint16: Uint16Array, int32: Int32Array, uint32: Uint32Array, int64: BigInt64Array, uint64: BigUint64Array,
  bool: Uint8Array, float16: Uint16Array,
};
(async () => {
  try {
    const session = await ort.InferenceSession.create(modelPath, {
      executionProviders: ['cpu'], intraOpNumThreads: threads, graphOptimizationLevel: 'disabled'});
    const feeds = {};
    for (const t of JSON.parse(fs.readFileSync(inPath)).tensors) {
      const buf = Buffer.from(t.data, 'base64');
      const A = arrays[t.dtype];
      const copy = new Uint8Array(buf.length); copy.set(buf);
      const data = new A(copy.buffer, 0, buf.length / A.BYTES_PER_ELEMENT);
      feeds[t.name] = new ort.Tensor(t.dtype, t.dtype === 'bool' ? Uint8Array.from(data) : data, t.dims);
    }
    const out = await session.run(feeds);
    const tensors = [];
    for (const name of session.outputNames) {
      const t = out[name];
      const bytes = Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength);
      tensors.push({name, dtype: t.type, dims: t.dims.map(Number), data: bytes.toString('base64')});
    }
    fs.writeFileSync(outPath, JSON.stringify({tensors}));
  } catch (e) {
    fs.writeFileSync(outPath, JSON.stringify({error: String(e && e.message || e)}));
    process.exit(3);
  }
})();
