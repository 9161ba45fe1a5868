//! `BarChart`: the report's pictures as inline SVG — bars per category, one series or several
//! (stacked or side by side), axis ticks, a legend and a `<title>` tooltip on every bar.

use maud::{Markup, html};

const WIDTH: f64 = 380.0;
const HEIGHT: f64 = 220.0;
const LEFT: f64 = 44.0;
/// Room right of the plot for half of the last edge label (`12.5k`).
const RIGHT: f64 = 20.0;
const TOP: f64 = 38.0;
const BOTTOM: f64 = 34.0;
/// The widest a character of a tick label (10 px, the page's sans-serif) is taken to be, and the
/// least room between two labels: what keeps labels under the axis from touching.
const CHAR_WIDTH: f64 = 6.5;
const LABEL_GAP: f64 = 8.0;

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

/// What is written under the bars.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum XAxis {
    /// Each bar's label (`labels`) under it; where they would touch, every k-th only (numbers in
    /// order, such as steps: the ones left out are read between those shown).
    Numbers,
    /// Each bar's label under it, cut to its bar's width (names: none may be left out); the whole
    /// label is its tooltip.
    Names,
    /// Bins of a continuous axis: `labels` are the bins' ranges (tooltips), and these the values
    /// at the bins' edges (one more than the bins), written at the edges, every k-th where they
    /// would touch.
    Edges(Vec<EdgeLabel>),
}

/// A value at a bin's edge, and whether it is round enough to be written when labels are thinned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EdgeLabel {
    pub text: String,
    /// The edge's index in multiples of the bin width from 0 (`value / width`), which thinning
    /// keeps only multiples of k of.
    pub step: u64,
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
    pub x_axis: XAxis,
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

    /// The y axis's ticks: 0, the middle and the top, the middle left out for a count axis whose
    /// middle is no whole number.
    fn y_ticks(&self, y_max: f64) -> Vec<f64> {
        let middle = y_max / 2.0;
        if self.unit == Unit::Count && middle.fract() != 0.0 {
            vec![0.0, y_max]
        } else {
            vec![0.0, middle, y_max]
        }
    }

    /// The labels under the axis, placed: `(x, text, the whole text when cut)`.
    fn x_ticks(&self, band: f64) -> Vec<(f64, String, Option<String>)> {
        let center = |idx: usize| LEFT + band * (idx as f64 + 0.5);
        match &self.x_axis {
            XAxis::Numbers => {
                let every = thinning(band, self.labels.iter().map(String::as_str));
                self.labels
                    .iter()
                    .enumerate()
                    .step_by(every as usize)
                    .map(|(idx, label)| (center(idx), label.clone(), None))
                    .collect()
            }
            XAxis::Names => self
                .labels
                .iter()
                .enumerate()
                .map(|(idx, label)| {
                    let fitted = fit(label, band - LABEL_GAP);
                    let whole = (fitted != *label).then(|| label.clone());
                    (center(idx), fitted, whole)
                })
                .collect(),
            XAxis::Edges(edges) => {
                let every = thinning(band, edges.iter().map(|edge| edge.text.as_str()));
                edges
                    .iter()
                    .enumerate()
                    .filter(|(_, edge)| edge.step % every == 0)
                    .map(|(idx, edge)| (LEFT + band * idx as f64, edge.text.clone(), None))
                    .collect()
            }
        }
    }

    pub(crate) fn render(&self) -> Markup {
        let plot_width = WIDTH - LEFT - RIGHT;
        let plot_height = HEIGHT - TOP - BOTTOM;
        let y_max = self.y_max();
        let y = |value: f64| TOP + plot_height * (1.0 - value / y_max);
        let n_labels = self.labels.len().max(1);
        let band = plot_width / n_labels as f64;
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
                    @for value in self.y_ticks(y_max) {
                        line.grid x1=(LEFT) x2=(fmt(WIDTH - RIGHT)) y1=(fmt(y(value))) y2=(fmt(y(value))) {}
                        text.tick.y-tick x=(fmt(LEFT - 4.0)) y=(fmt(y(value) + 4.0)) text-anchor="end" { (self.format(value)) }
                    }
                    @for bar in &bars {
                        rect class=(bar.class) x=(fmt(bar.x)) y=(fmt(bar.y)) width=(fmt(bar.width)) height=(fmt(bar.height)) {
                            title { (bar.tooltip) }
                        }
                    }
                    @for (x, text, whole) in self.x_ticks(band) {
                        text.tick.x-tick x=(fmt(x)) y=(fmt(HEIGHT - BOTTOM + 14.0)) text-anchor="middle" {
                            @if let Some(whole) = whole { title { (whole) } }
                            (text)
                        }
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

/// How wide `label` is taken to be under the axis.
fn label_width(label: &str) -> f64 {
    label.chars().count() as f64 * CHAR_WIDTH
}

/// The least k of 1, 2, 5, 10, 20, 50, … for which labels `spacing` apart, every k-th written,
/// leave room between the widest two.
fn thinning<'a>(spacing: f64, labels: impl Iterator<Item = &'a str>) -> u64 {
    let widest = labels.map(label_width).fold(0.0, f64::max);
    let needed = widest + LABEL_GAP;
    let mut magnitude = 1;
    loop {
        for every in [magnitude, 2 * magnitude, 5 * magnitude] {
            if spacing * every as f64 >= needed || every >= 1_000_000 {
                return every;
            }
        }
        magnitude *= 10;
    }
}

/// `label` cut, with `…`, to what `room` holds.
fn fit(label: &str, room: f64) -> String {
    if label_width(label) <= room {
        return label.to_owned();
    }
    let keep = ((room / CHAR_WIDTH).floor() as usize).saturating_sub(1).max(1);
    crate::base::text::shorten(label, keep).into_owned()
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

/// The smallest whole bin width of 1, 2, 2.5 (from 25 on), 5 × 10^k at or above `value`.
fn nice_width(value: u64) -> u64 {
    let mut magnitude = 1;
    loop {
        for width in [magnitude, 2 * magnitude, 5 * magnitude / 2, 5 * magnitude] {
            if width >= value.max(1) && (magnitude >= 10 || width != 5 * magnitude / 2) {
                return width;
            }
        }
        magnitude *= 10;
    }
}

/// Values counted into bins along a continuous axis.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Bins {
    /// Each bin's range, `10.5k–11k`.
    pub ranges: Vec<String>,
    /// The values at the bins' edges, one more than the bins.
    pub edges: Vec<EdgeLabel>,
    pub counts: Vec<f64>,
}

impl Bins {
    fn new(edges: Vec<EdgeLabel>, counts: Vec<f64>) -> Bins {
        let ranges = edges
            .windows(2)
            .map(|pair| format!("{}–{}", pair[0].text, pair[1].text))
            .collect();
        Bins {
            ranges,
            edges,
            counts,
        }
    }
}

/// Whole-number `values` counted into at most about `max_bins` bins of a round width, from the
/// bin that holds the smallest value to the one that holds the largest; none when there are no
/// values.
pub(crate) fn histogram(values: &[u64], max_bins: u64) -> Option<Bins> {
    let min = values.iter().copied().min()?;
    let max = values.iter().copied().max()?;
    let width = nice_width((max - min).div_ceil(max_bins.max(1)));
    let first = min / width;
    let n_bins = (max / width - first + 1) as usize;
    let mut counts = vec![0.0; n_bins];
    for &value in values {
        counts[(value / width - first) as usize] += 1.0;
    }
    let edges = (0..=n_bins as u64)
        .map(|idx| EdgeLabel {
            text: short_number((first + idx) * width),
            step: first + idx,
        })
        .collect();
    Some(Bins::new(edges, counts))
}

/// Fractions in 0..=1 counted into ten bins of 10 % (the last holds 100 %).
pub(crate) fn share_bins(shares: &[f64]) -> Bins {
    let edges = (0..=10u64)
        .map(|idx| EdgeLabel {
            text: format!("{}%", idx * 10),
            step: idx,
        })
        .collect();
    let mut counts = vec![0.0; 10];
    for share in shares {
        let bin = ((share.clamp(0.0, 1.0) * 10.0).floor() as usize).min(9);
        counts[bin] += 1.0;
    }
    Bins::new(edges, counts)
}

/// 1234 → `1.23k`, 12_500 → `12.5k`, 2_000_000 → `2M`: at most three significant digits' worth,
/// no trailing zeros.
fn short_number(value: u64) -> String {
    let (scaled, suffix) = match value {
        0..1_000 => return value.to_string(),
        1_000..1_000_000 => (value as f64 / 1e3, "k"),
        _ => (value as f64 / 1e6, "M"),
    };
    let text = format!("{scaled:.2}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text}{suffix}")
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
    fn histogram_starts_at_the_data_in_round_bins_and_counts_every_value_once() {
        let values = [10_912, 12_240, 13_601, 14_950, 11_000, 16_010];
        let Bins {
            ranges,
            edges,
            counts,
        } = histogram(&values, 12).unwrap();
        assert_eq!(counts.iter().sum::<f64>(), values.len() as f64);
        assert_eq!((ranges.len(), edges.len()), (counts.len(), counts.len() + 1));
        assert_eq!(edges[0].text, "10.5k");
        assert_eq!(ranges[0], "10.5k–11k");
        assert!(counts[0] > 0.0 && *counts.last().unwrap() > 0.0, "{counts:?}");
        let one = histogram(&[7, 7], 12).unwrap();
        assert_eq!((one.edges[0].text.as_str(), one.counts), ("7", vec![2.0]));
        assert_eq!(histogram(&[], 12), None);
        let shares = share_bins(&[0.0, 2.0 / 7.0, 0.99, 1.0]);
        assert_eq!(shares.counts, [1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 2.0]);
        assert_eq!(shares.ranges[2], "20%–30%");
    }

    #[test]
    fn nice_widths_are_whole() {
        for (value, expected) in [
            (0, 1),
            (1, 1),
            (3, 5),
            (6, 10),
            (12, 20),
            (21, 25),
            (26, 50),
            (430, 500),
        ] {
            assert_eq!(nice_width(value), expected, "{value}");
        }
    }

    #[test]
    fn short_numbers() {
        for (value, expected) in [
            (0, "0"),
            (999, "999"),
            (1_000, "1k"),
            (1_250, "1.25k"),
            (12_500, "12.5k"),
            (2_000_000, "2M"),
        ] {
            assert_eq!(short_number(value), expected, "{value}");
        }
    }

    #[test]
    fn labels_are_thinned_until_they_cannot_touch() {
        assert_eq!(thinning(100.0, ["1", "10"].into_iter()), 1);
        // Five characters (about 33 px) on edges 26 px apart: every other one.
        assert_eq!(thinning(26.0, ["10.5k", "11k"].into_iter()), 2);
        assert_eq!(thinning(5.0, ["12.5k"].into_iter()), 10);
        assert_eq!(fit("comparison (15)", 40.0), "compa…");
        assert_eq!(fit("hard (100)", 200.0), "hard (100)");
    }
}
