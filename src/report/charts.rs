//! `BarChart`: the report's pictures as inline SVG — bars per category, one series or several
//! (stacked or side by side), axis ticks, a legend and a `<title>` tooltip on every bar.

use maud::{Markup, html};

const WIDTH: f64 = 380.0;
const HEIGHT: f64 = 220.0;
const LEFT: f64 = 44.0;
const RIGHT: f64 = 8.0;
const TOP: f64 = 38.0;
const BOTTOM: f64 = 34.0;
/// At most this many category labels are written under the axis (every k-th beyond).
const MAX_LABELS: usize = 14;

/// How several series share a category.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Layout {
    Stacked,
    SideBySide,
}

/// How values read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unit {
    Count,
    /// A fraction in 0..=1, shown as a percentage.
    Fraction,
}

pub(crate) struct Series {
    pub name: &'static str,
    /// The CSS class that colours it.
    pub class: &'static str,
    pub values: Vec<f64>,
}

pub(crate) struct BarChart {
    pub title: String,
    pub x_label: &'static str,
    pub labels: Vec<String>,
    pub series: Vec<Series>,
    pub layout: Layout,
    pub unit: Unit,
}

impl BarChart {
    fn y_max(&self) -> f64 {
        if self.unit == Unit::Fraction {
            return 1.0;
        }
        let top = match self.layout {
            Layout::Stacked => (0..self.labels.len())
                .map(|idx| self.series.iter().map(|series| series.values[idx]).sum::<f64>())
                .fold(0.0, f64::max),
            Layout::SideBySide => self
                .series
                .iter()
                .flat_map(|series| series.values.iter().copied())
                .fold(0.0, f64::max),
        };
        nice_ceiling(top)
    }

    fn format(&self, value: f64) -> String {
        match self.unit {
            Unit::Count => format!("{value:.0}"),
            Unit::Fraction => format!("{:.1}%", value * 100.0),
        }
    }

    pub(crate) fn render(&self) -> Markup {
        let plot_width = WIDTH - LEFT - RIGHT;
        let plot_height = HEIGHT - TOP - BOTTOM;
        let y_max = self.y_max();
        let y = |value: f64| TOP + plot_height * (1.0 - value / y_max);
        let n_labels = self.labels.len().max(1);
        let band = plot_width / n_labels as f64;
        let label_every = self.labels.len().div_ceil(MAX_LABELS).max(1);
        let n_series = self.series.len().max(1);
        let mut bars = Vec::new();
        for (label_idx, label) in self.labels.iter().enumerate() {
            let x0 = LEFT + band * label_idx as f64;
            let mut stack = 0.0;
            for (series_idx, series) in self.series.iter().enumerate() {
                let value = series.values[label_idx];
                let (x, width, low) = match self.layout {
                    Layout::Stacked => (x0 + band * 0.1, band * 0.8, stack),
                    Layout::SideBySide => {
                        let width = band * 0.8 / n_series as f64;
                        (x0 + band * 0.1 + width * series_idx as f64, width, 0.0)
                    }
                };
                let high = low + value;
                if self.layout == Layout::Stacked {
                    stack = high;
                }
                bars.push(Bar {
                    class: series.class,
                    x,
                    y: y(high),
                    width,
                    height: y(low) - y(high),
                    tooltip: format!("{label} · {}: {}", series.name, self.format(value)),
                });
            }
        }
        html! {
            figure.chart {
                svg viewBox=(format!("0 0 {WIDTH} {HEIGHT}")) role="img" aria-label=(self.title) {
                    title { (self.title) }
                    text.chart-title x=(LEFT) y="14" { (self.title) }
                    @for (idx, series) in self.series.iter().enumerate() {
                        @let x = LEFT + 80.0 * idx as f64;
                        rect class=(series.class) x=(fmt(x)) y="20" width="10" height="10" {}
                        text.legend x=(fmt(x + 14.0)) y="29" { (series.name) }
                    }
                    @for tick in [0.0, 0.5, 1.0] {
                        @let value = y_max * tick;
                        line.grid x1=(LEFT) x2=(fmt(WIDTH - RIGHT)) y1=(fmt(y(value))) y2=(fmt(y(value))) {}
                        text.tick x=(fmt(LEFT - 4.0)) y=(fmt(y(value) + 4.0)) text-anchor="end" { (self.format(value)) }
                    }
                    @for bar in &bars {
                        rect class=(bar.class) x=(fmt(bar.x)) y=(fmt(bar.y)) width=(fmt(bar.width)) height=(fmt(bar.height)) {
                            title { (bar.tooltip) }
                        }
                    }
                    @for (label_idx, label) in self.labels.iter().enumerate().step_by(label_every) {
                        text.tick x=(fmt(LEFT + band * (label_idx as f64 + 0.5))) y=(fmt(HEIGHT - BOTTOM + 14.0)) text-anchor="middle" { (label) }
                    }
                    line.axis x1=(LEFT) x2=(fmt(WIDTH - RIGHT)) y1=(fmt(HEIGHT - BOTTOM)) y2=(fmt(HEIGHT - BOTTOM)) {}
                    text.axis-label x=(fmt(LEFT + plot_width / 2.0)) y=(fmt(HEIGHT - 4.0)) text-anchor="middle" { (self.x_label) }
                }
            }
        }
    }
}

/// One bar, placed.
struct Bar {
    class: &'static str,
    x: f64,
    y: f64,
    width: f64,
    height: f64,
    tooltip: String,
}

/// A coordinate with two decimals: small SVG, no visible loss.
fn fmt(value: f64) -> String {
    format!("{value:.2}")
}

/// The smallest of 1, 2, 2.5, 5 × 10^k at or above `value` (at least 1).
fn nice_ceiling(value: f64) -> f64 {
    if value <= 1.0 {
        return 1.0;
    }
    let magnitude = 10f64.powf(value.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0]
        .into_iter()
        .map(|step| step * magnitude)
        .find(|&ceiling| ceiling >= value)
        .unwrap_or(10.0 * magnitude)
}

/// `values` counted into `n_bins` equal bins from 0 to their maximum: the bins' labels (their
/// lower ends) and counts.
pub(crate) fn histogram(values: &[u64], n_bins: usize) -> (Vec<String>, Vec<f64>) {
    let max = values.iter().copied().max().unwrap_or(0);
    let width = (max / n_bins as u64 + 1).max(1);
    let n_used = (max / width + 1) as usize;
    let mut counts = vec![0.0; n_used];
    for &value in values {
        counts[(value / width) as usize] += 1.0;
    }
    let labels = (0..n_used).map(|bin| short_number(bin as u64 * width)).collect();
    (labels, counts)
}

/// 1234 → `1.2k`, 2_500_000 → `2.5M`.
fn short_number(value: u64) -> String {
    match value {
        0..1_000 => value.to_string(),
        1_000..1_000_000 => format!("{:.1}k", value as f64 / 1e3),
        _ => format!("{:.1}M", value as f64 / 1e6),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_ceilings() {
        for (value, expected) in [
            (0.0, 1.0),
            (3.0, 5.0),
            (7.0, 10.0),
            (11.0, 20.0),
            (240.0, 250.0),
            (7405.0, 10000.0),
        ] {
            assert_eq!(nice_ceiling(value), expected, "{value}");
        }
    }

    #[test]
    fn histogram_counts_every_value_once() {
        let values = [0, 1, 9, 10, 25, 99, 100];
        let (labels, counts) = histogram(&values, 10);
        assert_eq!(counts.iter().sum::<f64>(), values.len() as f64);
        assert_eq!(labels.len(), counts.len());
        assert_eq!(labels[0], "0");
        let (labels, counts) = histogram(&[], 10);
        assert_eq!((labels, counts), (vec!["0".to_owned()], vec![0.0]));
    }
}
