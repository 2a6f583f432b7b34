// The skeleton of `task new NAME --family custom`: an op no family states. Its manifest names
// family "custom" (none of docs/tasks.md's, so no family's params and no family's skills) and a
// hand-written reference, a float32 elementwise copy (y = x) in a grid-stride loop with the
// launch parameters the offline planner tunes; the comments say where the op goes.

#include "engine/task_skeleton_text.hpp"

namespace ks::engine::skeleton_detail {

namespace {

std::string custom_manifest(const std::string& n, const std::vector<int64_t>& shape) {
  int64_t elements = 1;
  std::string words;
  for (int64_t d : shape) {
    elements *= d;
    words += (words.empty() ? "" : " x ") + std::to_string(d);
  }
  auto count = static_cast<double>(elements);
  std::string s = list_text(shape);
  return comment(n + ": an op no family states, written by `kernelskill task new " + n +
                 " --family custom`. Its reference, " + n +
                 "_ref.cu, is the op's definition: "
                 "every candidate is verified and timed against it. Family \"custom\" is none "
                 "of docs/tasks.md's, so no family's params or skills apply: the offline "
                 "planner tunes the reference's launch parameters (tunables), a model backend "
                 "rewrites it. For an op a family states, `kernelskill task new " +
                 n +
                 " --family F` writes a manifest with no reference to write. To make it your "
                 "op:") +
         "#   1. " + n +
         "_ref.cu: write the operator where it says \"your operator\"; keep it\n"
         "#      simple and obviously correct (accumulate in double where order matters).\n"
         "#   2. here: the inputs and outputs (in the order ks_forward gets them), the tolerance\n"
         "#      and the cost; tasks/README.md explains every key. No `params`: nothing renders\n"
         "#      from them here.\n"
         "#   3. kernelskill task check " +
         n +
         ".toml   (no GPU needed)\n"
         "name = \"" +
         n +
         "\"\n"
         "family = \"custom\"\n"
         "about = \"" +
         n + ", " + words +
         " fp32 (say what it computes)\"\n"
         "reference = \"" +
         n +
         "_ref.cu\"\n"
         "inputs = [\n"
         "  { name = \"x\", dtype = \"f32\", shape = " +
         s +
         ", init = \"normal\" },\n"
         "]\n"
         "outputs = [\n"
         "  { name = \"y\", dtype = \"f32\", shape = " +
         s +
         " },\n"
         "]\n"
         "# tolerance: float32 defaults; an op that loses precision by nature may loosen atol or\n"
         "# rtol, never norm_rel past ~1e-5 (that would let TF32 or fp16 shortcuts pass)\n"
         "tolerance = { atol = 1e-5, rtol = 1e-5, norm_rel = 1e-5 }\n"
         "# cost: flops = one operation per element (" +
         std::to_string(elements) +
         "); bytes = x read once\n"
         "# and y written once, 4 bytes each. Count your op's useful flops per element.\n"
         "cost = { flops = " +
         toml_real(count) + ", bytes = " + toml_real(8.0 * count) +
         " }\n"
         "# tunables: launch parameters of the reference that the offline planner varies\n"
         "tunables = { " +
         std::string(threads_and_blocks) + " }\n";
}

std::string custom_reference(const std::string& n) {
  return "// Reference of task " + n + " (written by `kernelskill task new " + n +
         " --family custom`): y = op(x),\n"
         "// elementwise, x and y float32 of the same shape, contiguous. One thread per element\n"
         "// in a grid-stride loop with 64-bit indices. As written it copies x (y = x): write\n"
         "// your operator where it says so. It is the judge of every candidate: keep it simple\n"
         "// and obviously correct (accumulate in double where order matters).\n"
         "//\n"
         "// Return codes: 0 ok; 1 n_inputs != 1; 2 n_outputs != 1; 3 a tensor is not f32;\n"
         "// 4 the shapes differ; 5 a tensor is not contiguous; 10 a CUDA error at launch.\n"
         "#include \"kernelskill/abi.h\"\n"
         "\n"
         "#include <cuda_runtime.h>\n"
         "#include <stdint.h>\n"
         "\n"
         "// Launch parameters the offline planner tunes (the manifest's tunables): threads per\n"
         "// block, and the grid's cap.\n"
         "#ifndef KS_BLOCK_THREADS\n"
         "#define KS_BLOCK_THREADS 256\n"
         "#endif\n"
         "#ifndef KS_MAX_BLOCKS\n"
         "#define KS_MAX_BLOCKS 1048576\n"
         "#endif\n"
         "static_assert(KS_BLOCK_THREADS >= 1 && KS_BLOCK_THREADS <= 1024, \"threads per "
         "block\");\n"
         "\n"
         "namespace {\n"
         "\n"
         "bool is_contiguous(const ks_tensor& t) {\n"
         "  int64_t expect = 1;\n"
         "  for (int32_t d = t.ndim - 1; d >= 0; --d) {\n"
         "    if (t.shape[d] != 1 && t.stride[d] != expect) return false;\n"
         "    expect *= t.shape[d];\n"
         "  }\n"
         "  return true;\n"
         "}\n"
         "\n"
         "__global__ void " +
         n +
         "_ref_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {\n"
         "  const int64_t step = (int64_t)gridDim.x * blockDim.x;\n"
         "  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {\n"
         "    const float v = x[i];\n"
         "    y[i] = v;  // your operator: y[i] = f(v)\n"
         "  }\n"
         "}\n"
         "\n"
         "} // namespace\n"
         "\n"
         "extern \"C\" int ks_forward(const ks_tensor* inputs, int32_t n_inputs, ks_tensor* "
         "outputs,\n"
         "                          int32_t n_outputs, void* cuda_stream) {\n"
         "  if (n_inputs != 1) return 1;\n"
         "  if (n_outputs != 1) return 2;\n"
         "  const ks_tensor& x = inputs[0];\n"
         "  ks_tensor& y = outputs[0];\n"
         "  if (x.dtype != KS_F32 || y.dtype != KS_F32) return 3;\n"
         "  if (x.ndim != y.ndim) return 4;\n"
         "  for (int32_t d = 0; d < x.ndim; ++d)\n"
         "    if (x.shape[d] != y.shape[d]) return 4;\n"
         "  if (!is_contiguous(x) || !is_contiguous(y)) return 5;\n"
         "  const int64_t n = ks_numel(&x);\n"
         "  if (n == 0) return 0;\n"
         "  const int block = KS_BLOCK_THREADS;\n"
         "  int64_t grid = (n + block - 1) / block;\n"
         "  if (grid > KS_MAX_BLOCKS) grid = KS_MAX_BLOCKS;  // the grid-stride loop covers the "
         "rest\n"
         "  " +
         n +
         "_ref_kernel<<<(unsigned)grid, block, 0, (cudaStream_t)cuda_stream>>>(\n"
         "    (const float*)x.data, (float*)y.data, n);\n"
         "  return cudaGetLastError() != cudaSuccess ? 10 : 0;\n"
         "}\n";
}

} // namespace

task_skeleton custom_skeleton(const std::string& name, const std::vector<int64_t>& shape) {
  task_skeleton out;
  out.files.push_back({name + ".toml", custom_manifest(name, shape)});
  out.files.push_back({name + "_ref.cu", custom_reference(name)});
  out.what = "a hand-written elementwise reference that copies x " + list_text(shape) +
             " to y: write your op in " + name + "_ref.cu";
  return out;
}

} // namespace ks::engine::skeleton_detail
