// What a user sees when an experiment file is right, and when it is wrong: each error names
// file:line:col, the key path, and a suggestion where one helps.

#include <gtest/gtest.h>

#include <cstdlib>

#include "config/config_issue.hpp"
#include "config/experiment.hpp"
#include "temp_files.hpp"
#include "test_plugins.hpp"

namespace runner::config {
namespace {

using runner::testing::TempDir;

class ExperimentConfig : public ::testing::Test {
 protected:
  void SetUp() override { runner::testing::register_config_test_plugins(); }

  // The one-line message loading `yaml` (with `overrides`) fails with.
  std::string error_of(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
    const std::string path = dir_.write("exp.yaml", yaml);
    try {
      load_experiment(path, overrides);
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.exit_code(), 2);
      return e.what();
    }
    ADD_FAILURE() << "expected a config error for:\n" << yaml;
    return "";
  }
  std::string file() const { return (dir_.path() / "exp.yaml").string(); }

  TempDir dir_;
};

TEST_F(ExperimentConfig, ValidFileLoadsWithEveryDefaultFilledIn) {
  const auto e =
      load_experiment(dir_.write("exp.yaml", runner::testing::minimal_experiment_yaml()));
  EXPECT_EQ(e.doc["seed"], 42);
  EXPECT_EQ(e.doc["launch"]["num_processes"], 1);
  EXPECT_EQ(e.doc["launch"]["device"], "auto");
  EXPECT_EQ(e.doc["precision"], "fp32");
  EXPECT_EQ(e.doc["train"]["batch_size"], 32);
  // Plugin defaults come from the plugin's own schema; given values stay.
  EXPECT_DOUBLE_EQ(e.doc["data"]["dataset"]["val_split"].get<double>(), 0.1);
  EXPECT_EQ(e.doc["data"]["dataset"]["name"], "test_data");
  EXPECT_DOUBLE_EQ(e.doc["data"]["train_transforms"][0]["p"].get<double>(), 0.3);
  EXPECT_EQ(e.doc["model"]["width"], 8);
  EXPECT_EQ(e.doc["model"]["backbone"], "test_net");
}

TEST_F(ExperimentConfig, YamlSyntaxErrorNamesItsLine) {
  const std::string msg = error_of("name: t\nmodel: {backbone: test_net\noptimizer: [\n");
  EXPECT_NE(msg.find(file() + ":"), std::string::npos) << msg;
  EXPECT_NE(msg.find("YAML syntax error"), std::string::npos) << msg;
}

TEST_F(ExperimentConfig, UnknownTopLevelKeySuggestsTheRightOne) {
  const std::string msg = error_of(runner::testing::minimal_experiment_yaml() + "optimiser: {}\n");
  EXPECT_EQ(msg, file() + ":11:1: optimiser: unknown key (did you mean 'optimizer'?)");
}

TEST_F(ExperimentConfig, UnknownNestedPluginKeySuggestsTheRightOne) {
  std::string yaml = runner::testing::minimal_experiment_yaml();
  yaml.replace(yaml.find("lr: 0.001"), 9, "lrr: 0.001");
  const std::string msg = error_of(yaml);
  EXPECT_EQ(msg, file() +
                     ":6:29: optimizer.lrr: unknown key (did you mean 'lr'?) (and 1 more problem; "
                     "'runner validate FILE' lists them all)");
}

TEST_F(ExperimentConfig, WrongTypeSaysWhatWasExpected) {
  const std::string msg = error_of(runner::testing::minimal_experiment_yaml() + "seed: many\n");
  EXPECT_EQ(msg, file() + ":11:7: seed: expected an integer >= 0, got string 'many'");
}

TEST_F(ExperimentConfig, OutOfRangeValueSaysTheRange) {
  std::string yaml = runner::testing::minimal_experiment_yaml();
  yaml.replace(yaml.find("p: 0.3"), 6, "p: 1.5");
  EXPECT_EQ(error_of(yaml),
            file() + ":4:43: data.train_transforms.0.p: must be a number >= 0 and <= 1 (got 1.5)");
  EXPECT_EQ(error_of(runner::testing::minimal_experiment_yaml() + "launch: {num_processes: 0}\n"),
            file() + ":11:25: launch.num_processes: must be an integer >= 1 (got 0)");
}

TEST_F(ExperimentConfig, UnknownPluginNameListsCloseMatchesAndWhereToLook) {
  std::string yaml = runner::testing::minimal_experiment_yaml();
  yaml.replace(yaml.find("backbone: test_net"), 18, "backbone: test_nte");
  EXPECT_EQ(error_of(yaml), file() +
                                ":5:19: model.backbone: unknown backbone 'test_nte' (did you mean "
                                "'test_net'?; see 'runner plugins models')");
}

TEST_F(ExperimentConfig, MissingRequiredKeyIsNamed) {
  std::string yaml = runner::testing::minimal_experiment_yaml();
  yaml.erase(yaml.find("optimizer:"),
             yaml.find("\n", yaml.find("optimizer:")) - yaml.find("optimizer:") + 1);
  EXPECT_EQ(error_of(yaml), file() + ":1:1: missing required key 'optimizer'");
  std::string no_lr = runner::testing::minimal_experiment_yaml();
  no_lr.replace(no_lr.find(", lr: 0.001"), 11, "");
  EXPECT_EQ(error_of(no_lr), file() + ":6:1: optimizer: missing required key 'lr'");
}

// A string key takes its text as written (--set name=123 is "123"), and a quoted one as YAML's
// string: a sweep's settings write strings quoted (--set train.best.metric="loss").
TEST_F(ExperimentConfig, SetOfAStringKeyUnquotesAQuotedValue) {
  const std::string path = dir_.write("exp.yaml", runner::testing::minimal_experiment_yaml());
  const auto e = load_experiment(
      path, {"name=\"quoted_run\"", "output.root='runs b'", "train.best.metric=\"loss\""});
  EXPECT_EQ(e.doc.at("name"), "quoted_run");
  EXPECT_EQ(e.doc.at("output").at("root"), "runs b");
  EXPECT_EQ(e.options.train.best.metric, "loss");
  EXPECT_EQ(load_experiment(path, {"name=123"}).doc.at("name"), "123");
}

TEST_F(ExperimentConfig, BadSetPathsAreErrors) {
  const std::string yaml = runner::testing::minimal_experiment_yaml();
  EXPECT_EQ(error_of(yaml, {"optimizer.lrr=1"}),
            "--set optimizer.lrr=1: optimizer.lrr: unknown key (did you mean 'lr'?)");
  EXPECT_EQ(error_of(yaml, {"optimizer.lr.x=1"}),
            "--set optimizer.lr.x=1: optimizer.lr.x: cannot set a key inside a number value");
  EXPECT_EQ(error_of(yaml, {"seed"}),
            "--set seed: expected KEY=VALUE, e.g. --set optimizer.lr=1e-4");
  EXPECT_EQ(
      error_of(yaml, {"data.train_transforms.5.p=1"}),
      "--set data.train_transforms.5.p=1: data.train_transforms.5: index 5 is past the end of a "
      "list of 1 (use 1 to append)");
  // Not UTF-8 (a shell's bytes from another locale): refused without echoing them, since the
  // command is written into run.json.
  EXPECT_EQ(error_of(yaml, {"name=caf\xc3"}),
            "--set: the override is not valid UTF-8 text (byte 9 of its KEY=VALUE): write it in "
            "UTF-8");
  EXPECT_EQ(error_of(yaml, {"name=\xe0\x86\x9e"}),  // an overlong form: what JSON writers refuse
            "--set: the override is not valid UTF-8 text (byte 6 of its KEY=VALUE): write it in "
            "UTF-8");
  EXPECT_EQ(error_of(yaml, {"opt\xffimizer.lr=1"}),
            "--set: the override is not valid UTF-8 text (byte 4 of its KEY=VALUE): write it in "
            "UTF-8");
}

TEST_F(ExperimentConfig, SetValuesAreTypedByTheSchema) {
  const std::string path = dir_.write("exp.yaml", runner::testing::minimal_experiment_yaml());
  const auto e =
      load_experiment(path, {"optimizer.lr=1e-4", "name=123", "data.train_transforms.0.p=1",
                             "train.batch_size=auto", "launch={num_processes: 2}"});
  EXPECT_DOUBLE_EQ(e.doc["optimizer"]["lr"].get<double>(), 1e-4);
  EXPECT_EQ(e.doc["name"], "123");  // the schema says string: kept verbatim
  EXPECT_EQ(e.doc["data"]["train_transforms"][0]["p"], 1);
  EXPECT_EQ(e.doc["train"]["batch_size"], "auto");
  EXPECT_EQ(e.doc["launch"]["num_processes"], 2);
  // null (or ~, or nothing) resets an optional key.
  const auto reset = load_experiment(path, {"train.max_steps=5", "train.max_steps=null"});
  EXPECT_TRUE(reset.doc["train"]["max_steps"].is_null());
}

TEST_F(ExperimentConfig, MissingIncludeFileIsNamed) {
  const std::string msg =
      error_of("extends: base.yaml\n" + runner::testing::minimal_experiment_yaml());
  EXPECT_NE(msg.find(file() + ":1:10: extends: included file '"), std::string::npos) << msg;
  EXPECT_NE(msg.find("base.yaml' does not exist"), std::string::npos) << msg;
}

TEST_F(ExperimentConfig, IncludesMergeAndTheIncludingFileWins) {
  dir_.write("base.yaml", runner::testing::minimal_experiment_yaml() + "seed: 7\n");
  const auto e = load_experiment(
      dir_.write("child.yaml", "extends: base.yaml\noptimizer: {lr: 0.5}\nname: child\n"));
  EXPECT_EQ(e.doc["name"], "child");
  EXPECT_DOUBLE_EQ(e.doc["optimizer"]["lr"].get<double>(), 0.5);
  EXPECT_EQ(e.doc["optimizer"]["name"], "test_opt");  // merged from the base
  EXPECT_EQ(e.doc["seed"], 7);
  EXPECT_FALSE(e.doc.contains("extends"));
  // Errors in the child point at the child, errors in the base at the base.
  dir_.write("bad_child.yaml", "extends: base.yaml\noptimizer: {lr: -1}\n");
  try {
    load_experiment((dir_.path() / "bad_child.yaml").string());
    FAIL();
  } catch (const ConfigError& err) {
    EXPECT_NE(std::string(err.what())
                  .find("bad_child.yaml:2:17: optimizer.lr: must be a number > 0 (got -1)"),
              std::string::npos)
        << err.what();
  }
}

TEST_F(ExperimentConfig, IncludeCycleIsAnError) {
  dir_.write("a.yaml", "extends: b.yaml\n");
  dir_.write("b.yaml", "extends: a.yaml\n");
  EXPECT_THROW(load_experiment((dir_.path() / "a.yaml").string()), ConfigError);
}

TEST_F(ExperimentConfig, EnvironmentVariablesAreSubstitutedAndTyped) {
  unsetenv("RUNNER_TEST_UNSET");
  setenv("RUNNER_TEST_ROOT", "/data/digits", 1);
  std::string yaml = runner::testing::minimal_experiment_yaml();
  yaml.replace(yaml.find("{name: test_data}"), 17,
               "{name: test_data, root: \"${env:RUNNER_TEST_ROOT}\"}");
  // Block style: an unquoted ${...} inside a {flow mapping} is a YAML syntax error.
  yaml.replace(yaml.find("optimizer: {name: test_opt, lr: 0.001}"), 38,
               "optimizer:\n  name: test_opt\n  lr: ${env:RUNNER_TEST_UNSET:0.25}");
  const auto e = load_experiment(dir_.write("exp.yaml", yaml));
  EXPECT_EQ(e.doc["data"]["dataset"]["root"], "/data/digits");
  EXPECT_DOUBLE_EQ(e.doc["optimizer"]["lr"].get<double>(), 0.25);  // typed after substitution
}

TEST_F(ExperimentConfig, MissingEnvironmentVariableWithoutDefaultIsNamed) {
  unsetenv("RUNNER_TEST_UNSET");
  std::string yaml = runner::testing::minimal_experiment_yaml();
  yaml.replace(yaml.find("  dataset: {name: test_data}"), 27,
               "  dataset:\n    name: test_data\n    root: ${env:RUNNER_TEST_UNSET}");
  EXPECT_EQ(error_of(yaml),
            file() +
                ":5:11: data.dataset.root: environment variable 'RUNNER_TEST_UNSET' is "
                "not set and has no default: export it or write "
                "${env:RUNNER_TEST_UNSET:default}");
}

TEST_F(ExperimentConfig, DuplicateKeysAreErrors) {
  const std::string msg = error_of(runner::testing::minimal_experiment_yaml() + "name: again\n");
  EXPECT_EQ(msg, file() + ":11:1: name: duplicate key (each key may appear once in a mapping)");
}

TEST_F(ExperimentConfig, RawControlCharacterIsAnErrorAtItsPlace) {
  // A NUL inside a plain scalar: yaml-cpp would hand back other bytes than the file's.
  const std::string msg =
      error_of("name: t\nmodel:\n  backbone: small\t" + std::string(1, '\0') + "_cnn\n");
  EXPECT_EQ(msg, file() +
                     ":3:19: the file contains the control character 0x00 (only tab and line "
                     "breaks may appear in YAML text)");
}

TEST_F(ExperimentConfig, TextThatIsNotUtf8IsAnErrorAtItsPlace) {
  // A stray Latin-1 byte, an overlong form and a surrogate: JSON writers refuse all three, so
  // the file is refused where they are (not later, when run.json is written).
  for (const auto& [bad, column] : std::vector<std::pair<std::string, int>>{
           {"caf\xe9", 22}, {"\xe0\x86\x9e", 19}, {"\xed\xa0\x80", 19}})
    EXPECT_EQ(error_of("name: t\nmodel: {backbone: " + bad + "}\n"),
              file() + ":2:" + std::to_string(column) +
                  ": the file is not valid UTF-8 text (save it as UTF-8)")
        << column;
}

TEST_F(ExperimentConfig, QuotedScalarsStayStrings) {
  std::string yaml = runner::testing::minimal_experiment_yaml();
  yaml.replace(yaml.find("lr: 0.001"), 9, "lr: \"0.001\"");
  EXPECT_EQ(error_of(yaml),
            file() + ":6:33: optimizer.lr: expected a number > 0, got string '0.001'");
}

TEST_F(ExperimentConfig, EveryProblemIsListed) {
  const std::string path =
      dir_.write("exp.yaml", runner::testing::minimal_experiment_yaml() + "seed: -1\nfoo: 1\n");
  try {
    load_experiment(path);
    FAIL();
  } catch (const ConfigValidationError& e) {
    ASSERT_EQ(e.issues().size(), 2u);
  }
}

}  // namespace
}  // namespace runner::config
