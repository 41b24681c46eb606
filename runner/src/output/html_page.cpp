#include "output/html_page.hpp"

#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "output/page_assets.hpp"

namespace runner::output::html {

std::string escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

namespace {

// "0.500" -> "0.5", "12.0" -> "12"; a text without a point is left alone.
std::string drop_trailing_zeros(std::string text) {
  if (text.find('.') == std::string::npos) return text;
  while (text.back() == '0') text.pop_back();
  if (text.back() == '.') text.pop_back();
  return text;
}

}  // namespace

std::string number3(double v) {
  if (!std::isfinite(v)) return "n/a";
  if (v == 0) return "0";
  const double a = std::fabs(v);
  if (a < 1e-3 || a >= 1e6) {  // JavaScript's toExponential(2) style: 6.05e-4, 1.23e+6
    const std::string text = fmt::format("{:.2e}", v);
    const size_t e = text.find('e');
    const int exponent = std::atoi(text.c_str() + e + 1);
    return drop_trailing_zeros(text.substr(0, e)) + "e" + (exponent < 0 ? "-" : "+") +
           std::to_string(std::abs(exponent));
  }
  const int magnitude = static_cast<int>(std::floor(std::log10(a)));
  if (magnitude >= 3) {  // whole numbers, rounded to 3 significant digits
    const double unit = std::pow(10.0, magnitude - 2);
    return fmt::format("{:.0f}", std::round(v / unit) * unit);
  }
  return drop_trailing_zeros(fmt::format("{:.{}f}", v, 2 - magnitude));
}

std::string si3(double v) {
  const double a = std::fabs(v);
  if (!std::isfinite(v) || a < 1e3) return number3(v);
  if (a < 1e6) return number3(v / 1e3) + "k";
  if (a < 1e9) return number3(v / 1e6) + "M";
  return number3(v / 1e9) + "G";
}

std::string duration_text(double seconds) {
  if (seconds < 60) return fmt::format("{:.1f} s", seconds);
  const auto total = static_cast<long long>(std::llround(seconds));
  if (total < 3600) return fmt::format("{} min {:02} s", total / 60, total % 60);
  return fmt::format("{} h {:02} min", total / 3600, (total % 3600) / 60);
}

std::string card(const std::string& id, const std::string& label, const std::string& value,
                 const std::string& note, const std::string& raw) {
  return "<div class=\"card\" id=\"" + id + "\"><div class=\"k\">" + escape(label) +
         "</div><div class=\"v\"" + (raw.empty() ? "" : " data-value=\"" + escape(raw) + "\"") +
         ">" + escape(value) + "</div>" +
         (note.empty() ? "" : "<div class=\"n\">" + escape(note) + "</div>") + "</div>";
}

std::string page(const std::string& title, const std::string& body, const std::string& data_json,
                 const std::vector<std::string>& scripts) {
  // Inside <script>, only "</" can end the element early: JSON allows "<\/" for it.
  std::string data;
  data.reserve(data_json.size());
  for (size_t i = 0; i < data_json.size(); ++i) {
    data += data_json[i];
    if (data_json[i] == '<' && i + 1 < data_json.size() && data_json[i + 1] == '/') data += '\\';
  }
  std::string out =
      "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width\"><title>" +
      escape(title) + "</title><style>" + std::string(page_asset("page.css")) +
      "</style></head><body>" + body + "<script type=\"application/json\" id=\"runner-data\">" +
      data + "</script><script>" + std::string(page_asset("chart.js")) + "</script>";
  for (const auto& name : scripts) out += "<script>" + std::string(page_asset(name)) + "</script>";
  return out + "</body></html>\n";
}

}  // namespace runner::output::html
