//! SVG charts for the HTML report, drawn with plotters' SVG backend.
//!
//! plotters is built without its `ttf` feature: the SVG backend writes `<text>` elements
//! with a `font-family="sans-serif"` attribute and lets the browser pick the font, so no
//! font file, fontconfig or font-kit is needed and the report stays self-contained. The
//! price is that plotters only estimates text widths; layouts here leave room for that.
//!
//! Legends are drawn below the plot area rather than inside it, so they never hide data.
//! A missing value breaks a line instead of being drawn as 0.

use plotters::chart::MeshStyle;
use plotters::coord::ranged1d::SegmentValue;
use plotters::coord::Shift;
use plotters::prelude::*;

use netceil_model::fmt;

/// Width of every chart in SVG pixels; the page scales it down on narrow screens.
pub const WIDTH: u32 = 960;
const PLOT_HEIGHT: u32 = 300;
const FONT: &str = "sans-serif";
const LEGEND_FONT_PX: u32 = 13;
const LEGEND_ROW_PX: u32 = 20;

/// Tableau 10: distinct to most eyes, including the common colour-vision deficiencies.
const PALETTE: [RGBColor; 10] = [
    RGBColor(0x4e, 0x79, 0xa7),
    RGBColor(0xf2, 0x8e, 0x2b),
    RGBColor(0xe1, 0x57, 0x59),
    RGBColor(0x76, 0xb7, 0xb2),
    RGBColor(0x59, 0xa1, 0x4f),
    RGBColor(0xed, 0xc9, 0x48),
    RGBColor(0xb0, 0x7a, 0xa1),
    RGBColor(0xff, 0x9d, 0xa7),
    RGBColor(0x9c, 0x75, 0x5f),
    RGBColor(0xba, 0xb0, 0xac),
];

/// The i-th colour of the palette; after ten, lines are also dashed to stay apart.
pub fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// One line: a label and points (t, value); `None` leaves a gap.
#[derive(Debug, Clone)]
pub struct Line {
    pub label: String,
    pub points: Vec<(f64, Option<f64>)>,
    pub dashed: bool,
    pub color: RGBColor,
}

impl Line {
    fn has_data(&self) -> bool {
        self.points
            .iter()
            .any(|(_, v)| v.is_some_and(f64::is_finite))
    }

    /// Runs of consecutive present values.
    fn segments(&self) -> Vec<Vec<(f64, f64)>> {
        let mut out = Vec::new();
        let mut current = Vec::new();
        for &(t, v) in &self.points {
            match v.filter(|v| v.is_finite()) {
                Some(v) => current.push((t, v)),
                None => {
                    if !current.is_empty() {
                        out.push(std::mem::take(&mut current));
                    }
                }
            }
        }
        if !current.is_empty() {
            out.push(current);
        }
        out
    }

    fn max(&self) -> f64 {
        self.points
            .iter()
            .filter_map(|(_, v)| *v)
            .filter(|v| v.is_finite())
            .fold(0.0, f64::max)
    }
}

/// One y axis: its description (with the unit) and its lines.
#[derive(Debug, Clone)]
pub struct Axis {
    /// `throughput [bit/s]`.
    pub desc: String,
    pub lines: Vec<Line>,
    /// Fixed top of the axis (100 for percentages); otherwise the data's maximum + 8 %.
    pub max: Option<f64>,
}

impl Axis {
    fn top(&self) -> f64 {
        if let Some(m) = self.max {
            return m;
        }
        let m = self.lines.iter().map(Line::max).fold(0.0, f64::max);
        if m > 0.0 {
            m * 1.08
        } else {
            1.0
        }
    }
}

/// A time-series chart: one y axis, several lines.
#[derive(Debug, Clone)]
pub struct TimeChart {
    pub title: String,
    pub x_desc: String,
    pub left: Axis,
}

type ChartResult<T> = Result<T, String>;

/// The look every chart's axes share: the fonts (axis titles at `desc_size` px) and light
/// grid lines.
fn house_style<'m, 'a, 'b, X, Y, DB>(
    mesh: &'m mut MeshStyle<'a, 'b, X, Y, DB>,
    desc_size: u32,
) -> &'m mut MeshStyle<'a, 'b, X, Y, DB>
where
    X: Ranged,
    Y: Ranged,
    DB: DrawingBackend,
{
    mesh.axis_desc_style((FONT, desc_size))
        .label_style((FONT, 12))
        .light_line_style(RGBColor(0xee, 0xee, 0xee))
        .bold_line_style(RGBColor(0xdd, 0xdd, 0xdd))
}

fn err<E: std::fmt::Display>(e: E) -> String {
    format!("could not draw the chart: {e}")
}

/// A legend entry.
struct LegendItem {
    label: String,
    color: RGBColor,
    dashed: bool,
    /// Draw a filled box instead of a line sample (bar charts).
    boxed: bool,
}

/// Estimated width of a legend label: plotters cannot measure text for SVG either.
fn text_width(text: &str, px: u32) -> u32 {
    (text.chars().count() as f64 * f64::from(px) * 0.6).ceil() as u32
}

fn legend_layout(items: &[LegendItem]) -> Vec<Vec<usize>> {
    let mut rows: Vec<Vec<usize>> = vec![Vec::new()];
    let mut x = 0;
    for (i, item) in items.iter().enumerate() {
        let w = 28 + text_width(&item.label, LEGEND_FONT_PX) + 18;
        if x + w > WIDTH - 20 && !rows.last().is_some_and(Vec::is_empty) {
            rows.push(Vec::new());
            x = 0;
        }
        rows.last_mut().unwrap_or_else(|| unreachable!()).push(i);
        x += w;
    }
    rows
}

fn legend_height(items: &[LegendItem]) -> u32 {
    if items.is_empty() {
        return 0;
    }
    legend_layout(items).len() as u32 * LEGEND_ROW_PX + 10
}

fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    items: &[LegendItem],
) -> ChartResult<()> {
    let style = TextStyle::from((FONT, LEGEND_FONT_PX).into_font()).pos(
        plotters::style::text_anchor::Pos::new(
            plotters::style::text_anchor::HPos::Left,
            plotters::style::text_anchor::VPos::Center,
        ),
    );
    for (row_no, row) in legend_layout(items).iter().enumerate() {
        let y = 10 + row_no as i32 * LEGEND_ROW_PX as i32;
        let mut x = 70;
        for &i in row {
            let item = &items[i];
            if item.boxed {
                area.draw(&Rectangle::new(
                    [(x + 4, y - 6), (x + 20, y + 6)],
                    item.color.filled(),
                ))
                .map_err(err)?;
            } else if item.dashed {
                for k in 0..3 {
                    let x0 = x + k * 8;
                    area.draw(&PathElement::new(
                        vec![(x0, y), (x0 + 5, y)],
                        item.color.stroke_width(3),
                    ))
                    .map_err(err)?;
                }
            } else {
                area.draw(&PathElement::new(
                    vec![(x, y), (x + 22, y)],
                    item.color.stroke_width(3),
                ))
                .map_err(err)?;
            }
            area.draw(&Text::new(item.label.clone(), (x + 28, y), style.clone()))
                .map_err(err)?;
            x += 28 + text_width(&item.label, LEGEND_FONT_PX) as i32 + 18;
        }
    }
    Ok(())
}

/// Renders a time chart as an SVG string, or `None` when no line has any data.
pub fn time_chart(chart: &TimeChart) -> Option<ChartResult<String>> {
    if !chart.left.lines.iter().any(Line::has_data) {
        return None;
    }
    Some(draw_time_chart(chart))
}

/// A line with at most this many points gets a marker on each: a short run's 1–3 points
/// read as a line with its measurements on it, not as lone dots.
pub const SPARSE_POINTS: usize = 20;

fn draw_line<DB, CT>(ctx: &mut ChartContext<'_, DB, CT>, line: &Line) -> ChartResult<()>
where
    DB: DrawingBackend,
    CT: CoordTranslate<From = (f64, f64)>,
{
    let segments = line.segments();
    let sparse = segments.iter().map(Vec::len).sum::<usize>() <= SPARSE_POINTS;
    for seg in segments {
        let style = line.color.stroke_width(2);
        if line.dashed {
            ctx.draw_series(DashedLineSeries::new(seg.clone(), 6, 4, style))
                .map_err(err)?;
        } else {
            ctx.draw_series(LineSeries::new(seg.clone(), style))
                .map_err(err)?;
        }
        if sparse || seg.len() == 1 {
            ctx.draw_series(seg.iter().map(|p| Circle::new(*p, 4, line.color.filled())))
                .map_err(err)?;
        }
    }
    Ok(())
}

fn draw_time_chart(chart: &TimeChart) -> ChartResult<String> {
    let legend = legend_of(&chart.left.lines);
    let x_max = chart
        .left
        .lines
        .iter()
        .flat_map(|l| l.points.iter().map(|(t, _)| *t))
        .fold(0.0, f64::max)
        .max(1e-3);

    let height = PLOT_HEIGHT + legend_height(&legend);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let (plot_area, legend_area) = root.split_vertically(PLOT_HEIGHT);
        let mut ctx = ChartBuilder::on(&plot_area)
            .caption(&chart.title, (FONT, 17))
            .margin_left(8)
            .margin_right(16)
            .margin_top(8)
            .x_label_area_size(44)
            .y_label_area_size(72)
            .build_cartesian_2d(0.0..x_max, 0.0..chart.left.top())
            .map_err(err)?;
        house_style(&mut ctx.configure_mesh(), 14)
            .x_desc(chart.x_desc.as_str())
            .y_desc(chart.left.desc.as_str())
            .x_label_formatter(&|v| fmt::number(*v))
            .y_label_formatter(&|v| fmt::number(*v))
            .draw()
            .map_err(err)?;
        for line in &chart.left.lines {
            draw_line(&mut ctx, line)?;
        }
        draw_legend(&legend_area, &legend)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// One panel of a stacked chart: one y scale, the metrics that share it.
#[derive(Debug, Clone)]
pub struct Panel {
    /// What the panel shows, drawn above it: `context switches (cs_per_s)`.
    pub name: String,
    /// Short y-axis description with the unit: `[/s]`, `[bit/s]`.
    pub desc: String,
    pub lines: Vec<Line>,
    pub max: Option<f64>,
}

/// Panels stacked on one shared time axis: metrics of very different magnitudes
/// (throughput in Gbit/s, interrupts in k/s) each keep a readable scale while their
/// plateaus line up in time, as in the vmstat investigation's picture.
#[derive(Debug, Clone)]
pub struct PanelChart {
    pub title: String,
    pub x_desc: String,
    pub panels: Vec<Panel>,
}

const PANEL_HEIGHT: u32 = 150;
const PANEL_X_AXIS: u32 = 44;

/// Renders the panels that have data, or `None` when none has.
pub fn panel_chart(chart: &PanelChart) -> Option<ChartResult<String>> {
    let panels: Vec<&Panel> = chart
        .panels
        .iter()
        .filter(|p| p.lines.iter().any(Line::has_data))
        .collect();
    if panels.is_empty() {
        return None;
    }
    Some(draw_panels(chart, &panels))
}

fn draw_panels(chart: &PanelChart, panels: &[&Panel]) -> ChartResult<String> {
    // A line that recurs in several panels (one run in an overlay) is listed once.
    let mut legend: Vec<LegendItem> = Vec::new();
    for l in panels
        .iter()
        .flat_map(|p| p.lines.iter())
        .filter(|l| l.has_data())
    {
        if !legend
            .iter()
            .any(|item| item.label == l.label && item.color == l.color)
        {
            legend.push(LegendItem {
                label: l.label.clone(),
                color: l.color,
                dashed: l.dashed,
                boxed: false,
            });
        }
    }
    let x_max = panels
        .iter()
        .flat_map(|p| p.lines.iter())
        .flat_map(|l| l.points.iter().map(|(t, _)| *t))
        .fold(0.0, f64::max)
        .max(1e-3);
    let title_px = 30;
    let height =
        title_px + PANEL_HEIGHT * panels.len() as u32 + PANEL_X_AXIS + legend_height(&legend);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let body = root.titled(&chart.title, (FONT, 17)).map_err(err)?;
        let (mut rest, legend_area) =
            body.split_vertically(PANEL_HEIGHT * panels.len() as u32 + PANEL_X_AXIS);
        for (i, panel) in panels.iter().enumerate() {
            let last = i + 1 == panels.len();
            let size = PANEL_HEIGHT + if last { PANEL_X_AXIS } else { 0 };
            let (area, below) = rest.split_vertically(size);
            rest = below;
            let top = Axis {
                desc: String::new(),
                lines: panel.lines.clone(),
                max: panel.max,
            }
            .top();
            let mut ctx = ChartBuilder::on(&area)
                .caption(&panel.name, (FONT, 13))
                .margin_left(8)
                .margin_right(16)
                .margin_top(2)
                .x_label_area_size(if last { PANEL_X_AXIS } else { 0 })
                .y_label_area_size(72)
                .build_cartesian_2d(0.0..x_max, 0.0..top)
                .map_err(err)?;
            let mut mesh = ctx.configure_mesh();
            house_style(&mut mesh, 13)
                .y_desc(panel.desc.as_str())
                .y_labels(4)
                .x_label_formatter(&|v| fmt::number(*v))
                .y_label_formatter(&|v| fmt::number(*v));
            if last {
                mesh.x_desc(chart.x_desc.as_str());
            }
            mesh.draw().map_err(err)?;
            for line in &panel.lines {
                draw_line(&mut ctx, line)?;
            }
        }
        draw_legend(&legend_area, &legend)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// Cumulative distributions on a log x axis (latency CDFs): each line's points are
/// (value, % of samples at or below it), drawn with markers where they were measured.
pub fn cdf_chart(title: &str, x_desc: &str, lines: &[Line]) -> Option<ChartResult<String>> {
    let xs: Vec<f64> = lines
        .iter()
        .flat_map(|l| l.segments().into_iter().flatten())
        .map(|(x, _)| x)
        .filter(|x| x.is_finite() && *x > 0.0)
        .collect();
    if xs.is_empty() {
        return None;
    }
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = xs.iter().copied().fold(0.0, f64::max);
    let lo = 10f64.powf((lo / 1.5).log10().floor());
    let hi = 10f64.powf((hi * 1.5).log10().ceil());
    Some(draw_cdf(title, x_desc, lines, lo, hi))
}

fn draw_cdf(title: &str, x_desc: &str, lines: &[Line], lo: f64, hi: f64) -> ChartResult<String> {
    let legend = legend_of(lines);
    let height = PLOT_HEIGHT + legend_height(&legend);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let (plot_area, legend_area) = root.split_vertically(PLOT_HEIGHT);
        let mut ctx = ChartBuilder::on(&plot_area)
            .caption(title, (FONT, 17))
            .margin_left(8)
            .margin_right(16)
            .margin_top(8)
            .x_label_area_size(44)
            .y_label_area_size(72)
            .build_cartesian_2d((lo..hi).log_scale(), 0.0..100.0)
            .map_err(err)?;
        house_style(&mut ctx.configure_mesh(), 14)
            .x_desc(x_desc)
            .y_desc("samples at or below [%]")
            .x_label_formatter(&|v| fmt::number(*v))
            .y_label_formatter(&|v| fmt::number(*v))
            .draw()
            .map_err(err)?;
        for line in lines {
            draw_line(&mut ctx, line)?;
        }
        draw_legend(&legend_area, &legend)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

fn legend_of(lines: &[Line]) -> Vec<LegendItem> {
    lines
        .iter()
        .filter(|l| l.has_data())
        .map(|l| LegendItem {
            label: l.label.clone(),
            color: l.color,
            dashed: l.dashed,
            boxed: false,
        })
        .collect()
}

/// One box of a box plot: the quartiles and Tukey whiskers of `values`, all drawn.
#[derive(Debug, Clone, PartialEq)]
pub struct BoxStats {
    pub label: String,
    pub values: Vec<f64>,
    pub q1: f64,
    pub median: f64,
    pub q3: f64,
    /// The lowest and highest value within 1.5 × IQR of the box: always a measured value.
    pub whiskers: (f64, f64),
}

impl BoxStats {
    /// The statistics of `values` (finite ones only), or `None` when there are none.
    pub fn of(label: String, values: &[f64]) -> Option<BoxStats> {
        use netceil_model::stats::quantile_sorted;
        let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
        v.sort_by(f64::total_cmp);
        // The project's one quantile rule, so a median here is the median everywhere.
        let (q1, median, q3) = (
            quantile_sorted(&v, 0.25)?,
            quantile_sorted(&v, 0.5)?,
            quantile_sorted(&v, 0.75)?,
        );
        let reach = 1.5 * (q3 - q1);
        let low = v.iter().copied().find(|x| *x >= q1 - reach).unwrap_or(v[0]);
        let high = v
            .iter()
            .rev()
            .copied()
            .find(|x| *x <= q3 + reach)
            .unwrap_or(v[v.len() - 1]);
        Some(BoxStats {
            label,
            values: v,
            q1,
            median,
            q3,
            whiskers: (low, high),
        })
    }
}

/// Vertical box plots on one linear scale, each repeat drawn as a dot beside its box.
pub fn box_chart(title: &str, value_desc: &str, boxes: &[BoxStats]) -> ChartResult<String> {
    let n = boxes.len() as i32;
    let top = boxes
        .iter()
        .flat_map(|b| b.values.iter().copied())
        .fold(0.0, f64::max);
    let top = if top > 0.0 { top * 1.1 } else { 1.0 };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, PLOT_HEIGHT + 40)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut ctx = ChartBuilder::on(&root)
            .caption(title, (FONT, 17))
            .margin_left(8)
            .margin_right(16)
            .margin_top(8)
            .x_label_area_size(44)
            .y_label_area_size(72)
            .build_cartesian_2d((0..n).into_segmented(), 0.0..top)
            .map_err(err)?;
        let label_of = |v: &SegmentValue<i32>| match v {
            SegmentValue::CenterOf(i) if *i >= 0 && *i < n => boxes[*i as usize].label.clone(),
            _ => String::new(),
        };
        house_style(&mut ctx.configure_mesh(), 14)
            .disable_x_mesh()
            .y_desc(value_desc)
            .x_label_formatter(&label_of)
            .x_labels(boxes.len())
            .y_label_formatter(&|v| fmt::number(*v))
            .draw()
            .map_err(err)?;
        // Boxes at most 120 px wide, however few there are.
        let x_of = |i| ctx.backend_coord(&(SegmentValue::Exact(i), 0.0)).0;
        let slot = (x_of(1) - x_of(0)).unsigned_abs();
        let margin = (slot.saturating_sub(120) / 2).max(slot / 5);
        for (i, b) in boxes.iter().enumerate() {
            draw_box(&mut ctx, i as i32, b, color(i), margin)?;
        }
        root.present().map_err(err)?;
    }
    Ok(svg)
}

fn draw_box<DB, CT>(
    ctx: &mut ChartContext<'_, DB, CT>,
    i: i32,
    b: &BoxStats,
    c: RGBColor,
    margin: u32,
) -> ChartResult<()>
where
    DB: DrawingBackend,
    CT: CoordTranslate<From = (SegmentValue<i32>, f64)>,
{
    use SegmentValue::{CenterOf, Exact};
    let mut body = Rectangle::new(
        [(Exact(i), b.q3), (Exact(i + 1), b.q1)],
        c.mix(0.35).filled(),
    );
    body.set_margin(0, 0, margin, margin);
    let mut outline = Rectangle::new([(Exact(i), b.q3), (Exact(i + 1), b.q1)], c.stroke_width(2));
    outline.set_margin(0, 0, margin, margin);
    ctx.draw_series([body, outline]).map_err(err)?;
    let seg = |y0: f64, y1: f64| {
        PathElement::new(
            vec![(CenterOf(i), y0), (CenterOf(i), y1)],
            c.stroke_width(2),
        )
    };
    ctx.draw_series([seg(b.whiskers.0, b.q1), seg(b.q3, b.whiskers.1)])
        .map_err(err)?;
    // The median across the box, and each repeat as a dot.
    let mut median = Rectangle::new(
        [(Exact(i), b.median), (Exact(i + 1), b.median)],
        BLACK.stroke_width(3),
    );
    median.set_margin(0, 0, margin, margin);
    ctx.draw_series(std::iter::once(median)).map_err(err)?;
    ctx.draw_series(
        b.values
            .iter()
            .map(|v| Circle::new((CenterOf(i), *v), 4, BLACK.filled())),
    )
    .map_err(err)?;
    Ok(())
}

/// One horizontal bar.
#[derive(Debug, Clone)]
pub struct Bar {
    pub label: String,
    /// `None`: not measured; the bar is left out and the annotation says so.
    pub value: Option<f64>,
    /// Printed at the end of the bar: the exact figure.
    pub annotation: String,
    pub color: RGBColor,
}

/// A horizontal bar chart; `log` puts the value axis on a log scale (for latency
/// percentiles, where the maximum can be a thousand times the median).
pub fn bar_chart(title: &str, value_desc: &str, bars: &[Bar], log: bool) -> ChartResult<String> {
    let positive = bars
        .iter()
        .filter_map(|b| b.value)
        .filter(|v| v.is_finite() && *v > 0.0);
    let max = positive.clone().fold(0.0, f64::max);
    let min = positive.fold(f64::INFINITY, f64::min);
    if log && max > 0.0 {
        let lo = 10f64.powf((min / 1.5).log10().floor());
        let hi = max * 6.0;
        draw_bars(title, value_desc, bars, (lo..hi).log_scale(), lo)
    } else {
        let hi = if max > 0.0 { max * 1.25 } else { 1.0 };
        draw_bars(title, value_desc, bars, 0.0..hi, 0.0)
    }
}

fn draw_bars<X>(
    title: &str,
    value_desc: &str,
    bars: &[Bar],
    x_range: X,
    base: f64,
) -> ChartResult<String>
where
    X: plotters::coord::ranged1d::AsRangedCoord<Value = f64>,
    X::CoordDescType: plotters::coord::ranged1d::ValueFormatter<f64>,
{
    let n = bars.len() as i32;
    let label_px = bars
        .iter()
        .map(|b| text_width(&b.label, 12))
        .max()
        .unwrap_or(40)
        + 16;
    let height = 70 + 28 * bars.len() as u32 + 10;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut ctx = ChartBuilder::on(&root)
            .caption(title, (FONT, 17))
            .margin(8)
            .x_label_area_size(40)
            .y_label_area_size(label_px)
            .build_cartesian_2d(x_range, (0..n).into_segmented())
            .map_err(err)?;
        // Bars are listed top-down; the y axis counts bottom-up.
        let label_of = |v: &SegmentValue<i32>| match v {
            SegmentValue::CenterOf(i) if *i >= 0 && *i < n => {
                bars[(n - 1 - *i) as usize].label.clone()
            }
            _ => String::new(),
        };
        house_style(&mut ctx.configure_mesh(), 14)
            .disable_y_mesh()
            .x_desc(value_desc)
            .x_label_formatter(&|v| fmt::number(*v))
            .y_label_formatter(&label_of)
            .y_labels(bars.len())
            .draw()
            .map_err(err)?;
        let anchor =
            TextStyle::from((FONT, 12).into_font()).pos(plotters::style::text_anchor::Pos::new(
                plotters::style::text_anchor::HPos::Left,
                plotters::style::text_anchor::VPos::Center,
            ));
        for (i, bar) in bars.iter().enumerate() {
            let y = n - 1 - i as i32;
            let end = match bar.value.filter(|v| v.is_finite()) {
                Some(v) if v > base => {
                    let mut rect = Rectangle::new(
                        [
                            (base, SegmentValue::Exact(y)),
                            (v, SegmentValue::Exact(y + 1)),
                        ],
                        bar.color.filled(),
                    );
                    rect.set_margin(5, 5, 0, 0);
                    ctx.draw_series(std::iter::once(rect)).map_err(err)?;
                    v
                }
                _ => base,
            };
            ctx.draw_series(std::iter::once(Text::new(
                format!(" {}", bar.annotation),
                (end, SegmentValue::CenterOf(y)),
                anchor.clone(),
            )))
            .map_err(err)?;
        }
        root.present().map_err(err)?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(label: &str, values: &[Option<f64>]) -> Line {
        Line {
            label: label.into(),
            points: values
                .iter()
                .enumerate()
                .map(|(i, v)| ((i + 1) as f64, *v))
                .collect(),
            dashed: false,
            color: color(0),
        }
    }

    #[test]
    fn gaps_split_lines() {
        let l = line("x", &[Some(1.0), None, Some(2.0), Some(3.0)]);
        assert_eq!(
            l.segments(),
            vec![vec![(1.0, 1.0)], vec![(3.0, 2.0), (4.0, 3.0)]]
        );
    }

    #[test]
    fn time_chart_has_text_axes_and_legend_without_fonts() {
        let chart = TimeChart {
            title: "rates <&>".into(),
            x_desc: "time since start [s]".into(),
            left: Axis {
                desc: "throughput [bit/s]".into(),
                lines: vec![
                    line("load_rx_bits_per_s", &[Some(1e9), Some(2e9)]),
                    line("iface_rx_bits_per_s", &[Some(1.5e9), None]),
                ],
                max: None,
            },
        };
        let svg = time_chart(&chart).unwrap().unwrap();
        assert!(svg.starts_with("<svg"), "{svg:.80}");
        assert!(svg.contains("font-family=\"sans-serif\""));
        assert!(svg.contains("rates &lt;&amp;&gt;"), "plotters escapes text");
        assert!(svg.contains("throughput [bit/s]") && svg.contains("time since start [s]"));
        assert!(svg.contains("load_rx_bits_per_s") && svg.contains("iface_rx_bits_per_s"));
        // SI tick labels: a 2e9 maximum gives ticks in G.
        assert!(svg.contains("1.20 G\n"), "no SI tick label: {svg}");
    }

    #[test]
    fn panels_share_the_time_axis_and_skip_empty_ones() {
        let chart = PanelChart {
            title: "kernel".into(),
            x_desc: "time since start [s]".into(),
            panels: vec![
                Panel {
                    name: "context switches (cs_per_s)".into(),
                    desc: "[/s]".into(),
                    lines: vec![line("cs_per_s", &[Some(25e3), Some(27e3)])],
                    max: None,
                },
                Panel {
                    name: "empty".into(),
                    desc: "[/s]".into(),
                    lines: vec![line("nothing", &[None, None])],
                    max: None,
                },
                Panel {
                    name: "interrupts (intr_per_s)".into(),
                    desc: "[/s]".into(),
                    lines: vec![line("intr_per_s", &[Some(13e3), Some(14e3)])],
                    max: None,
                },
            ],
        };
        let svg = panel_chart(&chart).unwrap().unwrap();
        assert!(svg.contains("context switches (cs_per_s)") && svg.contains("interrupts"));
        assert!(!svg.contains("empty"), "a panel without data was drawn");
        assert_eq!(
            svg.matches("time since start [s]").count(),
            1,
            "one shared x axis"
        );
        let nothing = PanelChart {
            panels: vec![chart.panels[1].clone()],
            ..chart
        };
        assert!(panel_chart(&nothing).is_none());
    }

    fn chart_of(points: usize) -> String {
        let values: Vec<Option<f64>> = (0..points).map(|i| Some(i as f64)).collect();
        let chart = TimeChart {
            title: "t".into(),
            x_desc: "x".into(),
            left: Axis {
                desc: "y".into(),
                lines: vec![line("a", &values)],
                max: None,
            },
        };
        time_chart(&chart).unwrap().unwrap()
    }

    #[test]
    fn sparse_lines_get_a_marker_on_every_point_and_are_joined() {
        let three = chart_of(3);
        assert_eq!(three.matches("<circle").count(), 3, "a marker per point");
        let data_lines = three
            .lines()
            .filter(|l| l.contains("<polyline") && l.contains("#4E79A7"))
            .count();
        // The line through the points, and its sample in the legend.
        assert_eq!(data_lines, 2, "and a line through them: {three}");
        assert_eq!(chart_of(SPARSE_POINTS + 1).matches("<circle").count(), 0);
    }

    #[test]
    fn box_whiskers_end_at_measured_values() {
        let b = BoxStats::of("w".into(), &[10.0, 11.0, 12.0, 13.0, 100.0]).unwrap();
        assert_eq!(b.median, 12.0);
        assert!(b.q1 <= 11.0 && b.q3 >= 13.0, "{b:?}");
        // 100 is far outside 1.5 IQR: the whisker stops at the last value within it.
        assert_eq!(b.whiskers, (10.0, 13.0));
        assert!(BoxStats::of("none".into(), &[f64::NAN]).is_none());
        let svg = box_chart("repeats", "received [bit/s]", &[b]).unwrap();
        assert_eq!(svg.matches("<circle").count(), 5, "every repeat drawn");
    }

    #[test]
    fn cdf_has_a_log_axis_and_markers() {
        let l = Line {
            label: "run 1".into(),
            points: vec![(10.0, Some(0.0)), (20.0, Some(50.0)), (1000.0, Some(100.0))],
            dashed: false,
            color: color(0),
        };
        let svg = cdf_chart("latency", "latency [µs]", &[l]).unwrap().unwrap();
        assert!(svg.contains("samples at or below [%]") && svg.contains("run 1"));
        assert_eq!(svg.matches("<circle").count(), 3);
        // A log axis from 1 to 10 k: its ticks are the decades, each labelled plainly (no
        // 1.00e-5), which a linear axis over 10..1000 would not have.
        // The texts of the SVG: titles, tick labels, legend.
        let texts: Vec<&str> = svg
            .split("<text")
            .skip(1)
            .filter_map(|t| Some(t.split_once('>')?.1.split('<').next()?.trim()))
            .collect();
        // A log axis from 1 to 10 k labels its decades (a linear one over 10..1000 would label
        // 0, 200, 400…), each plainly: µs as measured, no 1.00e-5 of seconds.
        for tick in ["1", "10", "100", "1.00 k", "10.0 k"] {
            assert!(texts.contains(&tick), "tick {tick} missing: {texts:?}");
        }
        assert!(!texts.iter().any(|t| t.contains("e-")), "{texts:?}");
    }

    #[test]
    fn empty_chart_is_not_drawn() {
        let chart = TimeChart {
            title: "t".into(),
            x_desc: "x".into(),
            left: Axis {
                desc: "y".into(),
                lines: vec![line("a", &[None, None])],
                max: None,
            },
        };
        assert!(time_chart(&chart).is_none());
    }

    #[test]
    fn bar_chart_labels_each_bar() {
        let bars: Vec<Bar> = ["sent", "received", "lost"]
            .iter()
            .zip([Some(100.0), Some(90.0), None])
            .map(|(l, v)| Bar {
                label: (*l).into(),
                value: v,
                annotation: v.map_or("not measured".into(), |v| v.to_string()),
                color: color(0),
            })
            .collect();
        let svg = bar_chart("delivery", "packets", &bars, false).unwrap();
        for want in ["sent", "received", "lost", "not measured", "packets"] {
            assert!(svg.contains(want), "missing {want}");
        }
        let log = bar_chart("latency", "µs", &bars, true).unwrap();
        assert!(log.contains("<rect"));
    }
}
