// ktune report: one tuning run as an SVG (best so far against evaluations and against wall time)
// and a short text summary.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>

#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "cli/table.hpp"
#include "core/util.hpp"
#include "db/database.hpp"
#include "ktune/error.hpp"

namespace ktune::cli {
namespace {

struct Point {
  double x, y;
};

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
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

// A "nice" step for about `n` ticks over [0, span].
double tick_step(double span, int n) {
  if (span <= 0) return 1;
  const double raw = span / n;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * mag) return m * mag;
  return 10 * mag;
}

// One panel: every ok candidate as a dot, the best so far as a step line.
void panel(std::ostream& svg, double left, double top, double width, double height,
           const std::string& x_label, const std::string& y_label, const std::vector<Point>& dots,
           const std::vector<Point>& best, double x_max, double y_max) {
  const double x_span = x_max > 0 ? x_max : 1, y_span = y_max > 0 ? y_max * 1.05 : 1;
  auto px = [&](double x) { return left + width * x / x_span; };
  auto py = [&](double y) { return top + height - height * y / y_span; };
  svg << "<rect x='" << left << "' y='" << top << "' width='" << width << "' height='" << height
      << "' fill='none' stroke='#888'/>\n";
  const double xs = tick_step(x_span, 6), ys = tick_step(y_span, 5);
  for (double x = 0; x <= x_span + 1e-9; x += xs)
    svg << "<line x1='" << px(x) << "' y1='" << top + height << "' x2='" << px(x) << "' y2='"
        << top + height + 4 << "' stroke='#888'/><text x='" << px(x) << "' y='" << top + height + 16
        << "' text-anchor='middle'>" << num(x) << "</text>\n";
  for (double y = 0; y <= y_span + 1e-9; y += ys)
    svg << "<line x1='" << left << "' y1='" << py(y) << "' x2='" << left + width << "' y2='"
        << py(y) << "' stroke='#eee'/><text x='" << left - 6 << "' y='" << py(y) + 4
        << "' text-anchor='end'>" << num(y) << "</text>\n";
  svg << "<text x='" << left + width / 2 << "' y='" << top + height + 34
      << "' text-anchor='middle'>" << xml_escape(x_label) << "</text>\n";
  svg << "<text transform='translate(" << left - 46 << "," << top + height / 2
      << ") rotate(-90)' text-anchor='middle'>" << xml_escape(y_label) << "</text>\n";
  for (const Point& d : dots)
    svg << "<circle cx='" << px(d.x) << "' cy='" << py(d.y) << "' r='1.8' fill='#9ab'/>\n";
  if (!best.empty()) {
    svg << "<polyline fill='none' stroke='#c33' stroke-width='2' points='";
    double last_y = best.front().y;
    svg << px(best.front().x) << ',' << py(last_y);
    for (const Point& b : best) {
      svg << ' ' << px(b.x) << ',' << py(last_y) << ' ' << px(b.x) << ',' << py(b.y);
      last_y = b.y;
    }
    svg << ' ' << px(x_span) << ',' << py(last_y) << "'/>\n";
  }
}

}  // namespace

int cmd_report(const Common& common, std::int64_t run_id, const std::string& output) {
  Database db(common.resolved_db(), Database::Mode::kReadOnly);
  const std::optional<RunRecord> run = db.find_run(run_id);
  if (!run)
    throw Error(ErrorCode::kInvalidArgument,
                "report: there is no run " + std::to_string(run_id) + " in " + db.path() +
                    " (ktune query --all --json shows the run ids of rows)");
  ResultFilter filter;
  filter.run_id = run_id;
  std::vector<ResultRecord> rows = db.results(filter);
  std::sort(rows.begin(), rows.end(),
            [](const ResultRecord& a, const ResultRecord& b) { return a.id < b.id; });
  const std::optional<double> start = parse_utc(run->started_at);

  std::vector<Point> by_eval_dots, by_eval_best, by_time_dots, by_time_best;
  std::map<std::string, int> statuses;
  double best = 0, last_t = 0, t_97 = -1;
  std::size_t n_97 = 0;
  std::string unit, best_config;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const ResultRecord& r = rows[i];
    ++statuses[r.status];
    const double n = static_cast<double>(i + 1);
    const std::optional<double> at = parse_utc(r.created_at);
    const double t = start && at ? std::max(0.0, *at - *start) : 0;
    last_t = std::max(last_t, t);
    if (r.status != status::kOk || r.metric <= 0) continue;
    unit = r.unit;
    by_eval_dots.push_back({n, r.metric});
    by_time_dots.push_back({t, r.metric});
    if (r.metric > best) {
      best = r.metric;
      best_config = r.config;
      by_eval_best.push_back({n, best});
      by_time_best.push_back({t, best});
    }
  }
  // When the run first came within 3% of its own best.
  for (std::size_t i = 0; i < by_eval_best.size(); ++i)
    if (by_eval_best[i].y >= 0.97 * best) {
      n_97 = static_cast<std::size_t>(by_eval_best[i].x);
      t_97 = by_time_best[i].x;
      break;
    }

  const std::string path = output.empty() ? "run-" + std::to_string(run_id) + ".svg" : output;
  std::ostringstream svg;
  const double w = 960, h = 400;
  svg << "<svg xmlns='http://www.w3.org/2000/svg' width='" << w << "' height='" << h
      << "' font-family='sans-serif' font-size='11'>\n<rect width='100%' height='100%' "
         "fill='white'/>\n";
  svg << "<text x='20' y='22' font-size='14'>" << xml_escape(run->family + " " + run->problem)
      << "</text>\n<text x='20' y='40'>run " << run_id << ", " << xml_escape(run->strategy)
      << " (seed " << run->seed << "), " << rows.size() << " evaluations, " << statuses[status::kOk]
      << " ok; best " << num(best) << ' ' << xml_escape(unit) << "</text>\n<text x='" << w - 20
      << "' y='40' text-anchor='end'><tspan fill='#c33'>"
      << "line: best so far</tspan>  <tspan fill='#79a'>dots: every ok candidate</tspan></text>\n";
  const std::string y_label = unit.empty() ? "metric" : unit;
  panel(svg, 80, 60, 360, 270, "evaluations", y_label, by_eval_dots, by_eval_best,
        static_cast<double>(rows.size()), best);
  panel(svg, 560, 60, 360, 270, start ? "seconds since the run started" : "seconds (unknown)",
        y_label, by_time_dots, by_time_best, last_t, best);
  svg << "</svg>\n";
  write_output(path, svg.str(), "-o", {common.resolved_db()});

  Table t({"run", "value"});
  t.add({"problem", run->family + " " + run->problem});
  t.add({"strategy", run->strategy + " (seed " + std::to_string(run->seed) + "), " + run->budget});
  t.add({"status", run->status + ", started " + run->started_at});
  std::string counts;
  for (const auto& [s, c] : statuses)
    counts += (counts.empty() ? "" : ", ") + std::to_string(c) + " " + s;
  t.add({"evaluations", std::to_string(rows.size()) + (counts.empty() ? "" : " (" + counts + ")")});
  t.add({"best", best > 0 ? num(best) + " " + unit + "  " + best_config : "-"});
  if (n_97)
    t.add(
        {"within 3% of it", "after " + std::to_string(n_97) + " evaluations, " + num(t_97) + " s"});
  t.add({"wall time", num(last_t) + " s to the last row"});
  t.add({"plot", path});
  t.print(std::cout);
  check_stdout("report");
  return kExitOk;
}

}  // namespace ktune::cli
