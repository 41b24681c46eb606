# Sourced by the bench scripts: the experiment they time, the reference workload's transforms on
# Fashion-MNIST at 56 px (flips, brightness/contrast, Lanczos resize, normalize), fp32, Adam, a
# few steps, small validation and test limits, no prediction.
#
#   reference_experiment NAME BACKBONE PROCESSES THREADS BATCH STEPS [MEAN STD]  > file.yaml
reference_experiment() {
  local mean=${7:-0.2860} std=${8:-0.3530}
  cat <<YAML
name: $1
seed: 42
launch: {num_processes: $3, device: cpu, threads_per_process: $4}
precision: fp32
data:
  dataset: {name: mnist, root: /usr/share/datasets/fashion-mnist, val_split: 50000}
  train_transforms:
    - {name: horizontal_flip, p: 0.5}
    - {name: vertical_flip, p: 0.5}
    - {name: random_brightness_contrast, p: 0.2}
    - {name: resize, height: 56, width: 56, interpolation: lanczos4}
    - {name: normalize, mean: $mean, std: $std}
  eval_transforms:
    - {name: resize, height: 56, width: 56, interpolation: lanczos4}
    - {name: normalize, mean: $mean, std: $std}
  num_workers: 2
  limit: {val: 64, test: 64}
model: {backbone: $2, in_chans: 1, num_classes: 10}
optimizer: {name: adam, lr: 1e-3}
scheduler: {name: none}
loss: {name: cross_entropy}
metrics: [{name: accuracy}]
train: {epochs: 1, batch_size: $5, eval_batch_size: 64, max_steps: $6, log_every_steps: 5}
predict: {enabled: false}
YAML
}
