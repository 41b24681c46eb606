// The pages' number format (the same rule as charts.js, which report_test.py checks in the
// browser against these cards) and the page shell: self-contained, data that cannot end its
// script element early.

#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "output/html_page.hpp"
#include "output/page_assets.hpp"

namespace {

using runner::output::html::escape;
using runner::output::html::number3;
using runner::output::html::page;
using runner::output::html::si3;

TEST(PageNumbers, ThreeSignificantDigitsInOneForm) {
  EXPECT_EQ(number3(0.4350001), "0.435");
  EXPECT_EQ(number3(0.0497), "0.0497");
  EXPECT_EQ(number3(0.00105), "0.00105");
  EXPECT_EQ(number3(0.5), "0.5") << "trailing zeros dropped";
  EXPECT_EQ(number3(1.0), "1");
  EXPECT_EQ(number3(12.345), "12.3");
  EXPECT_EQ(number3(-2.3456), "-2.35");
  EXPECT_EQ(number3(1234.5), "1230") << "whole numbers rounded to 3 digits";
  EXPECT_EQ(number3(999.96), "1000");
  EXPECT_EQ(number3(6.05e-4), "6.05e-4") << "below 0.001: JavaScript's exponent form";
  EXPECT_EQ(number3(6e-4), "6e-4");
  EXPECT_EQ(number3(2.29e-5), "2.29e-5");
  EXPECT_EQ(number3(1.234e7), "1.23e+7");
  EXPECT_EQ(number3(0), "0");
  EXPECT_EQ(number3(NAN), "n/a");
  EXPECT_EQ(number3(INFINITY), "n/a");
}

TEST(PageNumbers, ThroughputAndCountsTakeAnSiPrefix) {
  EXPECT_EQ(si3(560.4), "560");
  EXPECT_EQ(si3(1100), "1.1k");
  EXPECT_EQ(si3(278890), "279k");
  EXPECT_EQ(si3(27.8e6), "27.8M");
  EXPECT_EQ(si3(3.2e9), "3.2G");
  EXPECT_EQ(si3(NAN), "n/a");
}

TEST(Page, CarriesChartJsAndItsScriptsInline) {
  ASSERT_FALSE(runner::output::page_asset("chart.js").empty());
  EXPECT_NE(runner::output::page_asset("chart.js").find("Chart.js v3"), std::string::npos);
  const std::string html =
      page("a <title>", "<main></main>", R"({"a":"</script><b>"})", {"charts.js", "report.js"});
  EXPECT_NE(html.find("<title>a &lt;title&gt;</title>"), std::string::npos);
  EXPECT_NE(html.find(R"({"a":"<\/script><b>"})"), std::string::npos)
      << "a value holding </script> must not end the data element";
  EXPECT_NE(html.find(std::string(runner::output::page_asset("report.js"))), std::string::npos);
  EXPECT_EQ(html.find("src=\"http"), std::string::npos) << "nothing loaded from a network";
  EXPECT_EQ(escape(R"(<a href="x">&)"), "&lt;a href=&quot;x&quot;&gt;&amp;");
}

}  // namespace
