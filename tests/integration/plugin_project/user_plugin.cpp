// Registers the transform `posterize` (keeps the top `bits` bits of u8 pixels).
#include <runner/data/transform.hpp>
#include <runner/plugin_api.hpp>
#include <runner/plugin_schemas.hpp>

namespace {

class Posterize : public runner::data::Transform {
 public:
  explicit Posterize(int bits) : mask_(static_cast<uchar>(0xFF << (8 - bits))) {}
  void apply(cv::Mat& image, runner::data::Rng&) const override { image &= cv::Scalar::all(mask_); }

 private:
  uchar mask_;
};

void register_user(runner::Registries& r) {
  r.transforms.add(
      "posterize",
      [](const nlohmann::json& p) { return std::make_shared<Posterize>(p.at("bits").get<int>()); },
      runner::schemas::closed_object({{"bits",
                                       {{"type", "integer"},
                                        {"minimum", 1},
                                        {"maximum", 8},
                                        {"default", 4},
                                        {"description", "bits kept"}}}}),
      "Keeps the top bits of each pixel (a user plugin built out of tree).");
}

}  // namespace

RUNNER_PLUGIN(register_user)
