#!/usr/bin/env bash
# Every shipped experiment and sweep validated by an independent validator (Debian's
# python3-jsonschema): the resolved experiments against the shipped schema and against the
# schema with every plugin included; the sweep files as written against the sweep schema.
set -eu
runner=$1
root=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$root"
"$runner" schema >"$tmp/full.schema.json"
status=0
for f in experiments/*.yaml; do
  "$runner" config --json "$f" >"$tmp/resolved.json"
  /usr/bin/python3 - "$tmp/resolved.json" schemas/experiment.schema.json "$tmp/full.schema.json" "$f" <<'PY' || status=1
import json, sys, jsonschema
doc = json.load(open(sys.argv[1]))
for schema_path in sys.argv[2:4]:
    schema = json.load(open(schema_path))
    jsonschema.Draft7Validator.check_schema(schema)
    errors = list(jsonschema.Draft7Validator(schema).iter_errors(doc))
    for e in errors:
        print(f"FAIL {sys.argv[4]} against {schema_path}: {'.'.join(map(str, e.path))}: {e.message}")
    if errors:
        sys.exit(1)
print(f"ok: {sys.argv[4]}")
PY
done
# The files as written (an editor's view, `extends` unresolved) against the shipped schema: a
# file with `extends` needs none of the sections its base provides.
for f in experiments/*.yaml; do
  /usr/bin/python3 - "$f" schemas/experiment.schema.json <<'PY' || status=1
import json, sys, yaml, jsonschema
doc = yaml.safe_load(open(sys.argv[1]))
errors = list(jsonschema.Draft7Validator(json.load(open(sys.argv[2]))).iter_errors(doc))
for e in errors:
    print(f"FAIL {sys.argv[1]} as written: {'.'.join(map(str, e.path))}: {e.message}")
sys.exit(1 if errors else 0)
PY
  echo "ok: $f as written"
done
printf 'name: x\ndata: {dataset: {name: mnist}}\n' >"$tmp/nomodel.yaml"
/usr/bin/python3 - "$tmp/nomodel.yaml" schemas/experiment.schema.json <<'PY' || status=1
import json, sys, yaml, jsonschema
doc = yaml.safe_load(open(sys.argv[1]))
errors = list(jsonschema.Draft7Validator(json.load(open(sys.argv[2]))).iter_errors(doc))
if not any("'model' is a required property" in e.message for e in errors):
    print("FAIL: a file without extends and without model passed the schema"); sys.exit(1)
print("ok: without extends, model is required")
PY
for f in experiments/sweeps/*.yaml; do
  /usr/bin/python3 - "$f" schemas/sweep.schema.json <<'PY' || status=1
import json, sys, yaml, jsonschema
doc = yaml.safe_load(open(sys.argv[1]))
schema = json.load(open(sys.argv[2]))
jsonschema.Draft7Validator.check_schema(schema)
errors = list(jsonschema.Draft7Validator(schema).iter_errors(doc))
for e in errors:
    print(f"FAIL {sys.argv[1]}: {'.'.join(map(str, e.path))}: {e.message}")
sys.exit(1 if errors else 0)
PY
  echo "ok: $f"
done
# The independent validator must also reject what runner rejects.
printf 'name: x\ndata: {dataset: {name: mnist}}\nmodel: {backbone: small_cnn}\noptimizer: {name: adam, lrr: 1}\n' >"$tmp/bad.yaml"
/usr/bin/python3 - "$tmp/bad.yaml" "$tmp/full.schema.json" <<'PY' || status=1
import json, sys, yaml, jsonschema
doc = yaml.safe_load(open(sys.argv[1]))
errors = list(jsonschema.Draft7Validator(json.load(open(sys.argv[2]))).iter_errors(doc))
if not errors:
    print("FAIL: python3-jsonschema accepted optimizer.lrr"); sys.exit(1)
print("ok: python3-jsonschema rejects optimizer.lrr too")
PY
exit $status
