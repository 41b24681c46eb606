#include "runner/models/model.hpp"

namespace runner::models {

nlohmann::json model_params_schema(const nlohmann::json& extra_properties) {
  nlohmann::json properties = {
      {"in_chans",
       {{"type", "integer"},
        {"minimum", 1},
        {"default", 3},
        {"description", "Input image channels (timm's in_chans): 1 for grayscale digits."}}},
      {"num_classes",
       {{"type", "integer"},
        {"minimum", 1},
        {"default", 1000},
        {"description", "Classifier outputs (timm's num_classes)."}}},
      {"drop_path_rate",
       {{"type", "number"},
        {"minimum", 0},
        {"maximum", 1},
        {"default", 0.0},
        {"description", "Stochastic-depth rate, raised linearly over the blocks as in timm."}}},
      {"pretrained",
       {{"type", {"boolean", "string"}},
        {"default", false},
        {"description",
         "Start from timm weights: a .safetensors file or a folder holding model.safetensors "
         "(relative to the experiment file), or a runner run: its folder (checkpoints/best.pt, "
         "else last.pt) or one of its checkpoint .pt files, whose model weights it takes; "
         "true for timm's default weights of the backbone, "
         "or hf-hub:timm/<model>.<tag>, both read offline from the Hugging Face cache "
         "($HF_HUB_CACHE, $HF_HOME/hub or ~/.cache/huggingface/hub). The first conv is adapted "
         "to in_chans and a classifier of another size is left at its fresh init, as timm's "
         "load_pretrained does. false: fresh initialisation."}}},
      {"init_from",
       {{"oneOf", {{{"type", "string"}, {"minLength", 1}}, {{"type", "null"}}}},
        {"default", nullptr},
        {"description",
         "Start a new run from an earlier one's weights (timm train.py's --initial-checkpoint): "
         "a run folder (its checkpoint by init_from_weights), one of its checkpoints/*.pt or "
         "a .safetensors file (relative to the experiment file). The optimizer and the schedule "
         "start fresh; the first conv is adapted to in_chans and a classifier of another class "
         "count is re-initialised, as timm's load_pretrained does. The source run is only "
         "read. Not beside pretrained. null: not from a run."}}},
      {"init_from_weights",
       {{"type", "string"},
        {"enum", {"best", "last", "ema"}},
        {"default", "best"},
        {"description",
         "Which weights of the init_from run: best (checkpoints/best.pt), last "
         "(checkpoints/last.pt) or ema (the average train.ema kept, from best.pt, else "
         "last.pt)."}}},
      {"freeze",
       {{"oneOf",
         {{{"type", "string"}, {"enum", {"backbone"}}},
          {{"type", "array"}, {"minItems", 1}, {"items", {{"type", "string"}, {"minLength", 1}}}},
          {{"type", "null"}}}},
        {"default", nullptr},
        {"description",
         "Parameters that do not train (timm's freeze, Lightning's BackboneFinetuning): "
         "backbone (everything but the classifier) or a list of parameter-name patterns "
         "(state_dict names, * for any characters). They keep their bits, the optimizer keeps "
         "no state for them and the running statistics of their BatchNorm layers stay fixed; "
         "train.unfreeze_at_epoch thaws them. null: nothing is frozen."}}}};
  for (auto it = extra_properties.begin(); it != extra_properties.end(); ++it)
    properties[it.key()] = it.value();
  return {{"type", "object"}, {"additionalProperties", false}, {"properties", properties}};
}

ModelOptions model_options_from(const nlohmann::json& params) {
  ModelOptions o;
  o.backbone = params.value("backbone", "");
  o.in_chans = params.value("in_chans", o.in_chans);
  o.num_classes = params.value("num_classes", o.num_classes);
  o.drop_path_rate = params.value("drop_path_rate", o.drop_path_rate);
  return o;
}

}  // namespace runner::models
