#include "distrun/models/max_pool.h"

#include <ATen/Parallel.h>
#include <torch/autograd.h>

#include <cmath>
#include <limits>

namespace distrun::models {

namespace {

struct Planes {
  int64_t count;   // N * C
  int64_t height;  // input
  int64_t width;
  int64_t outHeight() const { return height / 2; }
  int64_t outWidth() const { return width / 2; }
};

Planes planesOf(const torch::Tensor& t) { return {t.size(0) * t.size(1), t.size(2), t.size(3)}; }

// ATen's rule: scan the window row by row; a value wins when it is above the
// best so far or NaN (so the first of equal maxima, the last NaN).
void poolForward(const float* in, float* out, uint8_t* winner, const Planes& p) {
  const int64_t oh = p.outHeight(), ow = p.outWidth();
  for (int64_t plane = 0; plane < p.count; ++plane) {
    const float* image = in + plane * p.height * p.width;
    for (int64_t y = 0; y < oh; ++y) {
      const float* row0 = image + 2 * y * p.width;
      const float* row1 = row0 + p.width;
      for (int64_t x = 0; x < ow; ++x) {
        const float window[4] = {row0[2 * x], row0[2 * x + 1], row1[2 * x], row1[2 * x + 1]};
        float best = -std::numeric_limits<float>::infinity();
        uint8_t at = 0;
        for (uint8_t k = 0; k < 4; ++k) {
          if (window[k] > best || std::isnan(window[k])) {
            best = window[k];
            at = k;
          }
        }
        *out++ = best;
        *winner++ = at;
      }
    }
  }
}

void poolBackward(const float* gradOut, const uint8_t* winner, float* gradIn, const Planes& p) {
  const int64_t oh = p.outHeight(), ow = p.outWidth();
  for (int64_t plane = 0; plane < p.count; ++plane) {
    float* image = gradIn + plane * p.height * p.width;
    for (int64_t y = 0; y < oh; ++y) {
      for (int64_t x = 0; x < ow; ++x) {
        const uint8_t k = *winner++;
        image[(2 * y + k / 2) * p.width + 2 * x + k % 2] = *gradOut++;
      }
    }
  }
}

class MaxPool2x2Function : public torch::autograd::Function<MaxPool2x2Function> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& input) {
    const Planes p = planesOf(input);
    torch::Tensor out =
        torch::empty({input.size(0), input.size(1), p.outHeight(), p.outWidth()}, input.options());
    torch::Tensor winner = torch::empty(out.sizes(), input.options().dtype(torch::kUInt8));
    poolForward(input.data_ptr<float>(), out.data_ptr<float>(), winner.data_ptr<uint8_t>(), p);
    ctx->save_for_backward({winner});
    ctx->saved_data["sizes"] = input.sizes();
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const torch::Tensor winner = ctx->get_saved_variables()[0];
    const std::vector<int64_t> sizes = ctx->saved_data["sizes"].toIntVector();
    torch::Tensor gradIn = torch::zeros(sizes, grads[0].options());
    const torch::Tensor gradOut = grads[0].contiguous();
    poolBackward(gradOut.data_ptr<float>(), winner.data_ptr<uint8_t>(), gradIn.data_ptr<float>(),
                 planesOf(gradIn));
    return {gradIn};
  }
};

}  // namespace

torch::Tensor maxPool2x2(const torch::Tensor& input) {
  if (input.dim() != 4 || input.scalar_type() != torch::kFloat || !input.device().is_cpu() ||
      !input.is_contiguous() || input.size(2) < 2 || input.size(3) < 2 ||
      at::get_num_threads() > 1) {
    return torch::max_pool2d(input, 2);
  }
  return MaxPool2x2Function::apply(input);
}

}  // namespace distrun::models
