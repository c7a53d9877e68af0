//! Presenting a [`Report`]: terminal table, CSV, JSON, SVG plots and the Markdown that
//! goes into `BENCHMARKS.md`.

use super::peaks::Peaks;
use super::{Report, Row};
use crate::error::{Error, Result};
use crate::scalar::Precision;
use plotters::prelude::*;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// Today's date (UTC) as `YYYY-MM-DD`.
pub fn utc_date() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let days = (secs / 86_400) as i64;
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

fn fmt_ms(v: f64) -> String {
    if v == 0.0 {
        "-".into()
    } else if v < 0.01 {
        format!("{:.4}", v)
    } else if v < 10.0 {
        format!("{:.3}", v)
    } else {
        format!("{:.1}", v)
    }
}

fn fmt_opt_e(v: Option<f64>) -> String {
    v.map_or("-".into(), |x| format!("{x:.1e}"))
}

fn fmt_frac(v: Option<f64>) -> String {
    v.map_or("-".into(), |x| format!("{:.1}%", 100.0 * x))
}

/// The sweeps whose problems are block-tridiagonal systems without a border.
const BLOCK_TRIDIAGONAL_SUITES: [&str; 4] = ["horizon", "batch", "fp64-sweep", "kalman"];

/// Flops of sequential block Cholesky on `batch` systems of `nblocks` blocks of order
/// `block`: per system `N n^3 / 3` for the diagonal factors and `2 (N - 1) n^3` for the
/// coupling solves and the diagonal updates, about `7/3 n^3 N`. Issue #10 measures every
/// factorization against this count, whatever it executes (nested dissection runs
/// 2.3-2.7x as many flops).
///
/// ```
/// use blocktri::bench::report::sequential_factor_flops;
/// assert_eq!(sequential_factor_flops(1, 1, 3), 9.0);
/// assert_eq!(sequential_factor_flops(2, 4, 2), 2.0 * (4.0 * 8.0 / 3.0 + 2.0 * 3.0 * 8.0));
/// ```
pub fn sequential_factor_flops(batch: usize, nblocks: usize, block: usize) -> f64 {
    let n3 = (block as f64).powi(3);
    batch as f64 * (nblocks as f64 * n3 / 3.0 + 2.0 * nblocks.saturating_sub(1) as f64 * n3)
}

/// The share of the measured matrix-product peak (FP64 or FP32, by the row's precision)
/// that a `factor` or `factor+solve` row of a block-tridiagonal sweep reaches when its
/// time is charged with [`sequential_factor_flops`]; `None` for other phases and sweeps,
/// skipped rows and runs without a measured peak.
///
/// ```
/// use blocktri::bench::{Row, peaks::Peaks, report::sequential_share};
/// use blocktri::Precision;
/// let peaks = Peaks { fp64_tflops: 50.0, ..Peaks::default() };
/// let mut r = Row::new("fp64-sweep", "blocktri-gpu", Precision::F64, (1, 512, 512, 1), "factor");
/// r.time.median_ms = 16.0;
/// // 7/3 512^3 512 flops (less one block's coupling) in 16 ms at 50 TFLOP/s: about 20 %.
/// let share = sequential_share(&r, &peaks).unwrap();
/// assert!((share - 0.2).abs() < 0.01);
/// ```
pub fn sequential_share(r: &Row, p: &Peaks) -> Option<f64> {
    let peak = p.product_flops(if r.precision == Precision::F64.to_string() { Precision::F64 } else { Precision::F32 });
    let counted = matches!(r.phase.as_str(), "factor" | "factor+solve") && BLOCK_TRIDIAGONAL_SUITES.contains(&r.suite.as_str());
    (counted && peak > 0.0 && r.time.median_ms > 0.0)
        .then(|| sequential_factor_flops(r.batch, r.nblocks, r.block) / (peak * r.time.median_ms * 1e-3))
}

/// Our factor + solve against the fastest peer's, one line per configuration and method
/// of this project (`blocktri-*`) in `rows` (one sweep and precision): the peer's time is
/// its `factor+solve` row where it has one, else its `factor` plus its `solve`; a peer
/// that skipped either is left out. Empty when no configuration has both sides.
fn against_fastest_peer(rows: &[&Row]) -> String {
    type Config = (usize, usize, usize, usize);
    let key = |r: &Row| -> Config { (r.batch, r.nblocks, r.block, r.nrhs) };
    let measured = |r: &&&Row| r.time.median_ms > 0.0;
    // (config, method) -> (factor, solve, factor+solve) medians.
    let mut times: BTreeMap<(Config, &str), [Option<f64>; 3]> = BTreeMap::new();
    for r in rows.iter().filter(measured) {
        let slot = match r.phase.as_str() {
            "factor" => 0,
            "solve" => 1,
            "factor+solve" => 2,
            _ => continue,
        };
        times.entry((key(r), r.method.as_str())).or_default()[slot] = Some(r.time.median_ms);
    }
    let mut fastest: BTreeMap<Config, (f64, &str)> = BTreeMap::new();
    for (&(cfg, method), t) in &times {
        let total = t[2].or_else(|| Some(t[0]? + t[1]?));
        if let (false, Some(total)) = (method.starts_with("blocktri"), total) {
            let e = fastest.entry(cfg).or_insert((f64::INFINITY, method));
            if total < e.0 {
                *e = (total, method);
            }
        }
    }
    let mut s = String::new();
    for (&(cfg, method), t) in &times {
        if let (true, Some(ours), Some(&(peer, peer_name))) = (method.starts_with("blocktri"), t[2], fastest.get(&cfg)) {
            if s.is_empty() {
                s += "Factor + solve against the fastest peer (a peer's factor plus its solve where it has no combined row):\n\n";
                s += "| S | N | n | k | method | median ms | fastest peer | its ms | ratio |\n|---:|---:|---:|---:|---|---:|---|---:|---:|\n";
            }
            let (b, nb, n, k) = cfg;
            let _ = writeln!(
                s,
                "| {b} | {nb} | {n} | {k} | {method} | {} | {peer_name} | {} | {:.2} |",
                fmt_ms(ours),
                fmt_ms(peer),
                ours / peer
            );
        }
    }
    s
}

/// Flags residuals more than 100x worse than the best method's on the same problem.
pub fn flag_residuals(rows: &mut [Row]) {
    let mut best: BTreeMap<(String, String, usize, usize, usize), f64> = BTreeMap::new();
    for r in rows.iter() {
        if let Some(res) = r.residual {
            let key = (r.suite.clone(), r.precision.clone(), r.batch, r.nblocks, r.block);
            let e = best.entry(key).or_insert(f64::INFINITY);
            *e = e.min(res);
        }
    }
    for r in rows.iter_mut() {
        let key = (r.suite.clone(), r.precision.clone(), r.batch, r.nblocks, r.block);
        if let (Some(res), Some(&b)) = (r.residual, best.get(&key))
            && (!res.is_finite() || res > 100.0 * b.max(1e-300))
        {
            r.note = format!("{}FLAGGED: residual {:.1e} > 100x best ({:.1e})", if r.note.is_empty() { "" } else { "; " }, res, b);
        }
    }
}

/// A plain-text table of the rows: [`table_header`], one [`table_row`] per row, the notes.
pub fn table(report: &Report) -> String {
    let mut s = table_header(&report.peaks);
    for r in &report.rows {
        s += &table_row(r);
    }
    for n in &report.notes {
        let _ = writeln!(s, "note: {n}");
    }
    s
}

/// The device line (measured peaks) and the column titles of [`table`].
pub fn table_header(p: &Peaks) -> String {
    let mut s = String::new();
    if p.multiprocessors == 0 {
        let _ = writeln!(s, "device: no GPU (CPU methods only)");
    } else {
        let _ = writeln!(
            s,
            "device: {} ({} SMs, PTX {}) | copy {:.0} GB/s, write {:.0} GB/s, FP64 gemm {:.1} TFLOP/s, FP32 gemm {:.1} TFLOP/s, pinned H2D {:.1} GB/s, D2H {:.1} GB/s",
            p.device, p.multiprocessors, p.ptx_arch, p.copy_gbs, p.write_gbs, p.fp64_tflops, p.fp32_tflops, p.h2d_gbs, p.d2h_gbs
        );
    }
    let _ = writeln!(
        s,
        "{:<10} {:<4} {:>5} {:>6} {:>5} {:<15} {:<16} {:>10} {:>10} {:>9} {:>8}  note",
        "suite", "prec", "S", "N", "n", "method", "phase", "median ms", "min ms", "residual", "floor"
    );
    s
}

/// A row's phase, with its right-hand-side columns when there are several (`solve k=4`).
fn phase_label(r: &Row) -> String {
    if r.nrhs > 1 { format!("{} k={}", r.phase, r.nrhs) } else { r.phase.clone() }
}

/// One line of [`table`]; the phase says the right-hand-side columns when there are several.
pub fn table_row(r: &Row) -> String {
    let phase = phase_label(r);
    format!(
        "{:<10} {:<4} {:>5} {:>6} {:>5} {:<15} {:<16} {:>10} {:>10} {:>9} {:>8}  {}\n",
        r.suite,
        r.precision,
        r.batch,
        r.nblocks,
        r.block,
        r.method,
        phase,
        fmt_ms(r.time.median_ms),
        fmt_ms(r.time.min_ms),
        fmt_opt_e(r.residual),
        fmt_frac(r.fraction_of_floor),
        r.note
    )
}

/// Writes `rows.csv`, `report.json`, the plots and `report.md` into `dir`.
pub fn write_all(report: &Report, dir: &Path) -> Result<Vec<String>> {
    prepare_dir(dir)?;
    let mut written = Vec::new();
    let csv_path = dir.join("rows.csv");
    let mut csv = String::from(
        "suite,method,precision,batch,nblocks,block,nrhs,phase,median_ms,min_ms,max_ms,runs,residual,flops,bytes,floor_ms,fraction_of_floor,sequential_share,note\n",
    );
    for r in &report.rows {
        let _ = writeln!(
            csv,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},\"{}\"",
            r.suite,
            r.method,
            r.precision,
            r.batch,
            r.nblocks,
            r.block,
            r.nrhs,
            r.phase,
            r.time.median_ms,
            r.time.min_ms,
            r.time.max_ms,
            r.time.runs,
            r.residual.map_or(String::new(), |v| format!("{v:e}")),
            r.flops,
            r.bytes,
            r.floor_ms.map_or(String::new(), |v| v.to_string()),
            r.fraction_of_floor.map_or(String::new(), |v| v.to_string()),
            sequential_share(r, &report.peaks).map_or(String::new(), |v| v.to_string()),
            r.note.replace('"', "'")
        );
    }
    crate::io::write_bytes_atomically(&csv_path, csv.as_bytes())?;
    written.push(csv_path.display().to_string());
    let json_path = dir.join("report.json");
    let json =
        serde_json::to_string_pretty(report).map_err(|e| Error::Format { path: json_path.display().to_string(), msg: e.to_string() })?;
    crate::io::write_bytes_atomically(&json_path, json.as_bytes())?;
    written.push(json_path.display().to_string());
    let md_path = dir.join("report.md");
    crate::io::write_bytes_atomically(&md_path, markdown(report).as_bytes())?;
    written.push(md_path.display().to_string());
    written.extend(plots(report, dir)?);
    Ok(written)
}

/// Creates the report directory and checks that files can be written there: called
/// before a run, so that hours of measurements do not end in an unwritable directory.
/// (Every file of the report is then written whole or not at all.)
pub fn prepare_dir(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| Error::Io { path: dir.display().to_string(), source: e })?;
    crate::io::check_writable(&dir.join("report.md"))
}

/// Markdown tables, one per suite and precision, with every method side by side.
pub fn markdown(report: &Report) -> String {
    let mut s = String::new();
    let p = &report.peaks;
    let _ = writeln!(
        s,
        "Device: **{}** ({} SMs), PTX {}. Measured ceilings: device copy {:.0} GB/s (read + write), write {:.0} GB/s, FP64 gemm {:.1} TFLOP/s, FP32 gemm {:.1} TFLOP/s.\n",
        p.device, p.multiprocessors, p.ptx_arch, p.copy_gbs, p.write_gbs, p.fp64_tflops, p.fp32_tflops
    );
    let _ = writeln!(s, "Command: `{}` — date {}\n", report.command, report.date);
    let _ = writeln!(
        s,
        "`% of floor`: `max(flops / peak, bytes / bandwidth)` over the median, counting the flops the method's algorithm needs. `seq %` (factor and factor + solve): sequential block Cholesky's flops (`7/3 n^3 N` per system) over the measured product peak and the median, the same yardstick for every method.\n"
    );
    let mut suites: Vec<(String, String)> = report.rows.iter().map(|r| (r.suite.clone(), r.precision.clone())).collect();
    suites.dedup();
    let mut seen = std::collections::BTreeSet::new();
    for (suite, prec) in suites {
        if !seen.insert((suite.clone(), prec.clone())) {
            continue;
        }
        let _ = writeln!(s, "#### {suite} ({prec})\n");
        let _ = writeln!(
            s,
            "| S | N | n | method | phase | median ms | residual | % of floor | seq % | note |\n|---:|---:|---:|---|---|---:|---:|---:|---:|---|"
        );
        let rows: Vec<&Row> = report.rows.iter().filter(|r| r.suite == suite && r.precision == prec).collect();
        for r in &rows {
            let phase = phase_label(r);
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                r.batch,
                r.nblocks,
                r.block,
                r.method,
                phase,
                fmt_ms(r.time.median_ms),
                fmt_opt_e(r.residual),
                fmt_frac(r.fraction_of_floor),
                fmt_frac(sequential_share(r, p)),
                r.note
            );
        }
        s.push('\n');
        let comparison = against_fastest_peer(&rows);
        if !comparison.is_empty() {
            s += &comparison;
            s.push('\n');
        }
    }
    for n in &report.notes {
        let _ = writeln!(s, "- {n}");
    }
    s
}

type Series = BTreeMap<String, Vec<(f64, f64)>>;

fn line_plot(path: &Path, title: &str, xlabel: &str, ylabel: &str, series: &Series, log_x: bool) -> Result<()> {
    let pts: Vec<(f64, f64)> = series.values().flatten().copied().filter(|p| p.0 > 0.0 && p.1 > 0.0).collect();
    if pts.is_empty() {
        return Ok(());
    }
    crate::io::write_atomically(path, |tmp| draw_line_plot(tmp, path, title, (xlabel, ylabel), series, log_x, pts))
}

/// [`line_plot`]'s drawing into `tmp` (errors name `path`).
fn draw_line_plot(
    tmp: &Path,
    path: &Path,
    title: &str,
    (xlabel, ylabel): (&str, &str),
    series: &Series,
    log_x: bool,
    pts: Vec<(f64, f64)>,
) -> Result<()> {
    let (x0, x1) = pts.iter().fold((f64::MAX, f64::MIN), |a, p| (a.0.min(p.0), a.1.max(p.0)));
    let (y0, y1) = pts.iter().fold((f64::MAX, f64::MIN), |a, p| (a.0.min(p.1), a.1.max(p.1)));
    let err = |e: String| Error::Format { path: path.display().to_string(), msg: e };
    let root = SVGBackend::new(tmp, (900, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(e.to_string()))?;
    let x_range = (x0 * 0.8)..(x1 * 1.25);
    let y_range = (y0 * 0.7)..(y1 * 1.4);
    let palette = [RED, BLUE, GREEN, MAGENTA, CYAN, BLACK, RGBColor(255, 140, 0), RGBColor(128, 0, 128)];
    macro_rules! draw {
        ($chart:expr) => {{
            let mut chart = $chart;
            chart.configure_mesh().x_desc(xlabel).y_desc(ylabel).draw().map_err(|e| err(e.to_string()))?;
            for (i, (name, pts)) in series.iter().enumerate() {
                let color = palette[i % palette.len()];
                let mut v: Vec<(f64, f64)> = pts.iter().copied().filter(|p| p.0 > 0.0 && p.1 > 0.0).collect();
                v.sort_by(|a, b| a.0.total_cmp(&b.0));
                chart
                    .draw_series(LineSeries::new(v.clone(), color.stroke_width(2)))
                    .map_err(|e| err(e.to_string()))?
                    .label(name.clone())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2)));
                chart.draw_series(v.iter().map(|&p| Circle::new(p, 3, color.filled()))).map_err(|e| err(e.to_string()))?;
            }
            chart.configure_series_labels().background_style(WHITE.mix(0.85)).border_style(BLACK).draw().map_err(|e| err(e.to_string()))?;
        }};
    }
    let mut builder = ChartBuilder::on(&root);
    builder.caption(title, ("sans-serif", 20)).margin(12).x_label_area_size(40).y_label_area_size(64);
    if log_x {
        draw!(builder.build_cartesian_2d(x_range.log_scale(), y_range.log_scale()).map_err(|e| err(e.to_string()))?);
    } else {
        draw!(builder.build_cartesian_2d(x_range, y_range.log_scale()).map_err(|e| err(e.to_string()))?);
    }
    root.present().map_err(|e| err(e.to_string()))?;
    Ok(())
}

/// The plots: time vs n (paper sweep), time vs N (horizons), time vs S (batch), speedup
/// over each peer, tridiagonal inverse time vs n.
/// A plot series' name: the method, with its right-hand-side columns when there are several
/// (`bench --nrhs`), so that runs of different `k` stay apart.
fn series_name(r: &Row) -> String {
    if r.nrhs > 1 { format!("{} k={}", r.method, r.nrhs) } else { r.method.clone() }
}

pub fn plots(report: &Report, dir: &Path) -> Result<Vec<String>> {
    let mut written = Vec::new();
    let timed = |r: &&Row| r.time.median_ms > 0.0 && !r.note.starts_with("skipped");
    let mut put = |file: &str, title: &str, xl: &str, yl: &str, series: Series, log_x: bool| -> Result<()> {
        if series.values().any(|v| !v.is_empty()) {
            let path = dir.join(file);
            line_plot(&path, title, xl, yl, &series, log_x)?;
            written.push(path.display().to_string());
        }
        Ok(())
    };
    for prec in ["f64", "f32"] {
        let rows: Vec<&Row> = report.rows.iter().filter(|r| r.precision == prec).filter(timed).collect();
        // Paper sweep: factor time vs n.
        let mut s = Series::new();
        for r in rows.iter().filter(|r| r.suite == "fp64-sweep" && r.phase == "factor") {
            s.entry(series_name(r)).or_default().push((r.block as f64, r.time.median_ms));
        }
        put(&format!("fp64_sweep_factor_{prec}.svg"), &format!("Factor, N n = 262144 ({prec})"), "block size n", "ms", s, true)?;
        // Horizons: factor time vs N, one plot per n (S = 1).
        let mut ns: Vec<usize> = rows.iter().filter(|r| r.suite == "horizon").map(|r| r.block).collect();
        ns.sort_unstable();
        ns.dedup();
        for n in ns {
            for phase in ["factor", "solve"] {
                let mut s = Series::new();
                for r in rows.iter().filter(|r| r.suite == "horizon" && r.block == n && r.batch == 1 && r.phase == phase) {
                    s.entry(series_name(r)).or_default().push((r.nblocks as f64, r.time.median_ms));
                }
                put(&format!("horizon_{phase}_n{n}_{prec}.svg"), &format!("{phase}, n = {n}, S = 1 ({prec})"), "blocks N", "ms", s, true)?;
            }
            // Speedup of blocktri-gpu over each peer (factor).
            let ours: BTreeMap<(usize, usize), f64> = rows
                .iter()
                .filter(|r| r.suite == "horizon" && r.block == n && r.batch == 1 && r.phase == "factor" && r.method == "blocktri-gpu")
                .map(|r| ((r.nblocks, r.nrhs), r.time.median_ms))
                .collect();
            let mut s = Series::new();
            for r in rows
                .iter()
                .filter(|r| r.suite == "horizon" && r.block == n && r.batch == 1 && r.phase == "factor" && r.method != "blocktri-gpu")
            {
                if let Some(o) = ours.get(&(r.nblocks, r.nrhs)) {
                    s.entry(series_name(r)).or_default().push((r.nblocks as f64, r.time.median_ms / o));
                }
            }
            put(
                &format!("speedup_factor_n{n}_{prec}.svg"),
                &format!("blocktri-gpu factor speedup over peers, n = {n} ({prec})"),
                "blocks N",
                "peer time / ours",
                s,
                true,
            )?;
        }
        // Batch: time vs S.
        let mut s = Series::new();
        for r in rows.iter().filter(|r| r.suite == "batch" && r.phase == "factor") {
            s.entry(series_name(r)).or_default().push((r.batch as f64, r.time.median_ms));
        }
        put(&format!("batch_factor_{prec}.svg"), &format!("Factor of S systems, N = 64, n = 16 ({prec})"), "systems S", "ms", s, true)?;
        // Tridiagonal inverse.
        let mut s = Series::new();
        for r in rows.iter().filter(|r| r.suite == "tridiag") {
            s.entry(series_name(r)).or_default().push((r.block as f64, r.time.median_ms));
        }
        put(&format!("tridiag_inverse_{prec}.svg"), &format!("Tridiagonal inverse ({prec})"), "n", "ms", s, true)?;
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(method: &str, phase: &str, median_ms: f64) -> Row {
        let mut r = Row::new("fp64-sweep", method, Precision::F64, (1, 512, 512, 1), phase);
        r.time.median_ms = median_ms;
        r
    }

    fn report(rows: Vec<Row>) -> Report {
        let peaks = Peaks { fp64_tflops: 50.0, fp32_tflops: 40.0, ..Peaks::default() };
        Report { peaks, rows, notes: Vec::new(), command: "bench".into(), date: "2026-12-02".into() }
    }

    #[test]
    fn the_sequential_share_charges_seven_thirds_n_cubed_per_block() {
        let r = report(vec![row("blocktri-gpu", "factor", 16.0), row("blocktri-gpu", "solve", 2.0)]);
        let flops = 512.0 * 512f64.powi(3) / 3.0 + 2.0 * 511.0 * 512f64.powi(3);
        let share = sequential_share(&r.rows[0], &r.peaks).unwrap();
        assert!((share - flops / (50e12 * 16e-3)).abs() < 1e-12, "{share}");
        // Solves, other sweeps, skipped rows and runs without a peak have none.
        assert_eq!(sequential_share(&r.rows[1], &r.peaks), None);
        let mut inverse = row("blocktri-gpu", "factor", 1.0);
        inverse.suite = "tridiag".into();
        assert_eq!(sequential_share(&inverse, &r.peaks), None);
        assert_eq!(sequential_share(&row("cudss", "factor", 0.0).skipped("too large"), &r.peaks), None);
        assert_eq!(sequential_share(&r.rows[0], &Peaks::default()), None);
    }

    #[test]
    fn the_fastest_peer_is_chosen_by_factor_plus_solve() {
        let md = markdown(&report(vec![
            row("blocktri-gpu", "factor", 16.0),
            row("blocktri-gpu", "solve", 2.0),
            row("blocktri-gpu", "factor+solve", 18.0),
            // factor + solve 74.5: the fastest peer, though cuDSS's solve is faster.
            row("vendor-schur", "factor", 63.4),
            row("vendor-schur", "solve", 11.1),
            row("cudss", "factor", 275.0),
            row("cudss", "solve", 4.2),
            // A peer that skipped its factor is left out.
            row("vendor-seq", "factor", 0.0).skipped("needs 40 GB"),
            row("vendor-seq", "solve", 1.0),
        ]));
        let line = md.lines().find(|l| l.starts_with("| 1 | 512 | 512 | 1 | blocktri-gpu |")).expect(&md);
        assert_eq!(line, "| 1 | 512 | 512 | 1 | blocktri-gpu | 18.0 | vendor-schur | 74.5 | 0.24 |");
        assert!(md.contains("| seq % |"), "{md}");
    }

    #[test]
    fn no_comparison_without_a_peer_or_without_our_factor_plus_solve() {
        let ours_only = markdown(&report(vec![row("blocktri-gpu", "factor+solve", 18.0)]));
        assert!(!ours_only.contains("fastest peer"), "{ours_only}");
        let peers_only = markdown(&report(vec![row("vendor-schur", "factor", 63.4), row("vendor-schur", "solve", 11.1)]));
        assert!(!peers_only.contains("fastest peer"), "{peers_only}");
    }
}
