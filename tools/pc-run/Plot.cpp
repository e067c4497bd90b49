//===- Plot.cpp - Loss curves as an SVG chart -----------------------------===//

#include "tools/pc-run/Plot.h"

#include "runtime/exec/Safetensors.h"

#include "absl/strings/str_cat.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace pc::tools {

namespace {

struct Point {
  double step, loss;
};

std::vector<Point> pointsOf(const llvm::json::Array &entries) {
  std::vector<Point> out;
  for (const llvm::json::Value &v : entries)
    if (const llvm::json::Object *o = v.getAsObject()) {
      std::optional<double> step = o->getNumber("step");
      std::optional<double> loss = o->getNumber("loss");
      if (step && loss && std::isfinite(*loss))
        out.push_back({*step, *loss});
    }
  return out;
}

/// "M x y L x y ..." through `points`.
std::string path(const std::vector<Point> &points, auto x, auto y) {
  std::string d;
  for (size_t i = 0; i < points.size(); ++i)
    d += llvm::formatv("{0}{1:f1} {2:f1} ", i ? "L" : "M", x(points[i].step),
                       y(points[i].loss))
             .str();
  return d;
}

} // namespace

std::string lossCurvesSvg(const llvm::json::Array &steps,
                          const llvm::json::Array &validation,
                          const std::string &title) {
  std::vector<Point> train = pointsOf(steps), eval = pointsOf(validation);
  // Step s's loss is of the weights after s updates, as is the validation
  // loss "after step s": both are plotted at s.
  double x0 = 1e300, x1 = -1e300, y0 = 1e300, y1 = -1e300;
  for (const std::vector<Point> *curve : {&train, &eval})
    for (const Point &p : *curve) {
      x0 = std::min(x0, p.step);
      x1 = std::max(x1, p.step);
      y0 = std::min(y0, p.loss);
      y1 = std::max(y1, p.loss);
    }
  if (x0 > x1) {
    x0 = 0;
    x1 = 1;
    y0 = 0;
    y1 = 1;
  }
  if (x1 == x0)
    x1 = x0 + 1;
  if (y1 == y0)
    y1 = y0 + 1;
  y0 = std::max(0.0, y0 - 0.05 * (y1 - y0));
  const double width = 720, height = 420, left = 60, right = 20, top = 40,
               bottom = 50;
  auto x = [&](double s) {
    return left + (s - x0) / (x1 - x0) * (width - left - right);
  };
  auto y = [&](double l) {
    return height - bottom - (l - y0) / (y1 - y0) * (height - top - bottom);
  };
  std::string svg = llvm::formatv(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" "
      "height=\"{1}\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{2}\" y=\"22\" font-size=\"14\">{3}</text>\n",
      width, height, left, title);
  // Axes and five ticks on each.
  svg += llvm::formatv("<path d=\"M{0} {1} L{0} {2} L{3} {2}\" "
                       "stroke=\"black\" fill=\"none\"/>\n",
                       left, top, height - bottom, width - right);
  for (int i = 0; i <= 4; ++i) {
    double s = x0 + (x1 - x0) * i / 4, l = y0 + (y1 - y0) * i / 4;
    svg += llvm::formatv(
        "<text x=\"{0:f1}\" y=\"{1}\" text-anchor=\"middle\">{2}</text>\n",
        x(s), height - bottom + 18, static_cast<int64_t>(std::round(s)));
    svg += llvm::formatv("<text x=\"{0}\" y=\"{1:f1}\" "
                         "text-anchor=\"end\">{2:f2}</text>\n",
                         left - 6, y(l) + 4, l);
    svg += llvm::formatv("<path d=\"M{0} {1:f1} L{2} {1:f1}\" "
                         "stroke=\"#ddd\"/>\n",
                         left, y(l), width - right);
  }
  svg += llvm::formatv("<text x=\"{0}\" y=\"{1}\" text-anchor=\"middle\">"
                       "step</text>\n",
                       (left + width - right) / 2, height - 12);
  svg += llvm::formatv("<text x=\"16\" y=\"{0}\" transform=\"rotate(-90 16 "
                       "{0})\" text-anchor=\"middle\">loss</text>\n",
                       (top + height - bottom) / 2);
  if (!train.empty())
    svg += llvm::formatv("<path d=\"{0}\" stroke=\"#1f77b4\" "
                         "stroke-width=\"1.5\" fill=\"none\"/>\n",
                         path(train, x, y));
  if (!eval.empty()) {
    svg += llvm::formatv("<path d=\"{0}\" stroke=\"#ff7f0e\" "
                         "stroke-width=\"2\" fill=\"none\"/>\n",
                         path(eval, x, y));
    for (const Point &p : eval)
      svg += llvm::formatv("<circle cx=\"{0:f1}\" cy=\"{1:f1}\" r=\"3.5\" "
                           "fill=\"#ff7f0e\"/>\n",
                           x(p.step), y(p.loss));
  }
  // The legend.
  svg += llvm::formatv(
      "<path d=\"M{0} 30 L{1} 30\" stroke=\"#1f77b4\" stroke-width=\"2\"/>"
      "<text x=\"{2}\" y=\"34\">training loss</text>\n"
      "<path d=\"M{3} 30 L{4} 30\" stroke=\"#ff7f0e\" stroke-width=\"2\"/>"
      "<text x=\"{5}\" y=\"34\">validation loss</text>\n",
      width - 290, width - 270, width - 264, width - 150, width - 130,
      width - 124);
  svg += "</svg>\n";
  return svg;
}

absl::Status plotReport(const std::string &reportPath,
                        const std::string &svgPath) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> text =
      llvm::MemoryBuffer::getFile(reportPath);
  if (!text)
    return absl::NotFoundError(absl::StrCat(reportPath, ": cannot open (",
                                            text.getError().message(), ")"));
  llvm::Expected<llvm::json::Value> json =
      llvm::json::parse((*text)->getBuffer());
  if (!json)
    return absl::InvalidArgumentError(absl::StrCat(
        reportPath, ": bad JSON: ", llvm::toString(json.takeError())));
  const llvm::json::Object *top = json->getAsObject();
  const llvm::json::Array *steps = top ? top->getArray("steps") : nullptr;
  if (!steps || steps->empty())
    return absl::InvalidArgumentError(absl::StrCat(
        reportPath, ": not the report of a training run (no steps)"));
  const llvm::json::Array *validation = top->getArray("validation");
  llvm::json::Array none;
  std::string title = "pc-run";
  if (std::optional<llvm::StringRef> g = top->getString("graph"))
    title = absl::StrCat("@", g->str(), ": loss");
  return runtime::writeFileAtomically(
      svgPath, lossCurvesSvg(*steps, validation ? *validation : none, title));
}

} // namespace pc::tools
