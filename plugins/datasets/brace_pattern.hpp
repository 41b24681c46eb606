#pragma once
// Shard lists written as WebDataset (and the Python braceexpand package it uses) writes them:
// "train-{000000..000099}.tar" (a numeric range, zero-padded to its bounds' width),
// "{a,b,c}.tar" (alternatives), several braces in one pattern (every combination, left to
// right) and "::" between patterns.

#include <string>
#include <vector>

namespace runner::data {

/// Every name `pattern` stands for, in order. Throws runner::ConfigError (saying what is wrong)
/// for an unclosed brace, a range whose bounds are not integers, or more than 10^7 names.
std::vector<std::string> expand_braces(const std::string& pattern);

}  // namespace runner::data
