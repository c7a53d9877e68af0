//! Files: problems in `.npz` (arrays `diag`, `sub`, optional `rhs`; C or Fortran order),
//! matrices in Matrix Market `.mtx` with a block size, solutions and inverses in `.npy`.
//!
//! Array conventions (`N` blocks of `n x n`, `k` right-hand sides, optional leading batch
//! axis `S`):
//! - `diag`: `(N, n, n)` or `(S, N, n, n)`, `diag[i][r][c] = D_i(r, c)`;
//! - `sub`: `(N-1, n, n)` or `(S, N-1, n, n)`, `sub[i]` is the block `A[i+1, i]` (rows of
//!   block `i + 1`, columns of block `i`);
//! - `rhs`: `(N n,)`, `(N n, k)` or `(S, N n, k)`.
//!
//! Both memory orders are accepted on input, `f32` or `f64` values; output is C order.

use crate::arrow::{ArrowVec, BlockTridiagArrow};
use crate::error::{Error, Result};
use crate::matrix::{BlockTridiag, BlockVec, Shape};
use crate::scalar::{Scalar, cast, wide};
use npyz::WriterBuilder;
use std::path::Path;

fn io_err(path: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |source| Error::Io { path: path.display().to_string(), source }
}

fn format_err(path: &Path, msg: impl Into<String>) -> Error {
    Error::Format { path: path.display().to_string(), msg: msg.into() }
}

/// An n-dimensional array read from a `.npy`: values as `f64`, shape, element strides.
struct NdArray {
    data: Vec<f64>,
    shape: Vec<usize>,
    strides: Vec<usize>,
}

impl NdArray {
    fn from_npy<R: std::io::Read>(npy: npyz::NpyFile<R>, path: &Path, name: &str) -> Result<Self> {
        let shape: Vec<usize> = npy.shape().iter().map(|&d| d as usize).collect();
        let order = npy.order();
        // `descr()` is the Python literal of the type string, quotes included: `'<f8'`.
        let descr = npy.dtype().descr();
        let data: Vec<f64> = match descr.trim_matches(['\'', '"']) {
            "<f8" | "=f8" | "|f8" => npy.into_vec::<f64>().map_err(io_err(path))?,
            "<f4" | "=f4" | "|f4" => npy.into_vec::<f32>().map_err(io_err(path))?.into_iter().map(f64::from).collect(),
            other => {
                return Err(format_err(path, format!("array {name:?} has dtype {other}; expected float32 or float64 (little endian)")));
            }
        };
        let mut strides = vec![1; shape.len()];
        match order {
            npyz::Order::C => {
                for d in (0..shape.len().saturating_sub(1)).rev() {
                    strides[d] = strides[d + 1] * shape[d + 1];
                }
            }
            npyz::Order::Fortran => {
                for d in 1..shape.len() {
                    strides[d] = strides[d - 1] * shape[d - 1];
                }
            }
        }
        Ok(NdArray { data, shape, strides })
    }

    fn at(&self, idx: &[usize]) -> f64 {
        self.data[idx.iter().zip(&self.strides).map(|(i, s)| i * s).sum::<usize>()]
    }

    /// The values in logical row-major (C) order, whatever the storage order was.
    fn into_c_order(self) -> Vec<f64> {
        if self.shape.len() < 2 || (self.strides.last() == Some(&1) && self.strides.windows(2).all(|w| w[0] >= w[1])) {
            return self.data;
        }
        let mut idx = vec![0; self.shape.len()];
        let mut out = Vec::with_capacity(self.data.len());
        for _ in 0..self.data.len() {
            out.push(self.at(&idx));
            // Advance the multi-index, last axis fastest.
            for d in (0..idx.len()).rev() {
                idx[d] += 1;
                if idx[d] < self.shape[d] {
                    break;
                }
                idx[d] = 0;
            }
        }
        out
    }
}

/// The `.npz` (zip) archive at `path` and the file's length.
fn open_npz(path: &Path) -> Result<(zip::ZipArchive<std::io::BufReader<std::fs::File>>, u64)> {
    let (file, file_len) = open_file(path)?;
    let zip = zip::ZipArchive::new(file).map_err(|e| format_err(path, format!("not a valid .npz (zip) archive: {e}")))?;
    Ok((zip, file_len))
}

/// Opens an `.npz` and returns a reader of its arrays by name (`None`: not in the archive).
fn npz_arrays(path: &Path) -> Result<impl FnMut(&str) -> Result<Option<NdArray>> + '_> {
    let (mut zip, file_len) = open_npz(path)?;
    Ok(move |name: &str| {
        let entry = match zip.by_name(&format!("{name}.npy")) {
            Ok(entry) => entry,
            Err(zip::result::ZipError::FileNotFound) => return Ok(None),
            Err(e) => return Err(format_err(path, format!("array {name:?}: {e}"))),
        };
        // Bytes the entry can really deliver: a stored one no more than the file, a
        // deflated one no more than deflate's maximum ratio (1032:1) allows.
        let size = match entry.compression() {
            zip::CompressionMethod::Stored => entry.size().min(file_len),
            _ => entry.size().min(entry.compressed_size().saturating_mul(1032)),
        };
        Ok(Some(read_array(entry, size, path, name)?))
    })
}

/// Reads the `.npy` array of `total` bytes from `r`, checking its header before anything
/// is allocated for the data: the shape's element count and byte size must not overflow
/// and the data must fit in the bytes that follow the header. (A corrupt or hostile
/// header would otherwise have the reader allocate what it declares.)
fn read_array<R: std::io::Read>(mut r: R, total: u64, path: &Path, name: &str) -> Result<NdArray> {
    let bad = |msg: String| format_err(path, format!("array {name:?}: {msg}"));
    let mut head = vec![0u8; 10];
    r.read_exact(&mut head).map_err(|_| bad(format!("{total} bytes: too short for an .npy header")))?;
    if &head[..6] != b"\x93NUMPY" {
        return Err(bad("not an .npy array (bad magic bytes)".into()));
    }
    // Version 1 stores the header length in 2 bytes, versions 2 and 3 in 4.
    let len = if head[6] == 1 {
        u16::from_le_bytes([head[8], head[9]]) as usize
    } else {
        let mut more = [0u8; 2];
        r.read_exact(&mut more).map_err(|_| bad("truncated .npy header".into()))?;
        head.extend_from_slice(&more);
        u32::from_le_bytes([head[8], head[9], head[10], head[11]]) as usize
    };
    const MAX_HEADER: usize = 1 << 20;
    if len > MAX_HEADER || (head.len() + len) as u64 > total {
        return Err(bad(format!("header of {len} bytes does not fit in the {total} bytes present")));
    }
    let start = head.len();
    head.resize(start + len, 0);
    r.read_exact(&mut head[start..]).map_err(|_| bad("truncated .npy header".into()))?;
    let dict = String::from_utf8_lossy(&head[start..]);
    let shape = header_shape(&dict).ok_or_else(|| bad(format!("unreadable shape in the header {:?}", dict.trim())))?;
    let item = if dict.contains("f8") {
        8
    } else if dict.contains("f4") {
        4
    } else {
        1
    };
    let declared = shape.iter().try_fold(item as u64, |acc, &d| acc.checked_mul(d));
    let present = total - head.len() as u64;
    match declared {
        None => return Err(bad(format!("shape {shape:?} overflows"))),
        Some(bytes) if bytes > present => {
            return Err(bad(format!("shape {shape:?} declares {bytes} bytes of data, the file holds {present} after the header")));
        }
        Some(_) => {}
    }
    // npyz's header parser backtracks exponentially on unclosed nested brackets (a 140-byte
    // header held it for minutes): hand it only headers nested like a real one.
    if !brackets_plausible(&dict) {
        return Err(bad(format!("malformed header {:?} (unbalanced or deeply nested brackets)", dict.trim())));
    }
    let header = npyz::NpyHeader::from_reader(&head[..]).map_err(|e| bad(format!("bad .npy header: {e}")))?;
    NdArray::from_npy(npyz::NpyFile::with_header(header, r), path, name)
}

/// Whether the brackets of an `.npy` header dictionary (outside quoted strings) balance and
/// nest at most 3 deep (the dictionary, a shape tuple, one more level of slack): what the
/// float arrays this crate reads have.
fn brackets_plausible(dict: &str) -> bool {
    let (mut stack, mut quote) = (Vec::new(), None);
    for ch in dict.chars() {
        match (quote, ch) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(ch),
            (None, '(' | '[' | '{') => {
                stack.push(ch);
                if stack.len() > 3 {
                    return false;
                }
            }
            (None, ')' | ']' | '}') => {
                let open = match ch {
                    ')' => '(',
                    ']' => '[',
                    _ => '{',
                };
                if stack.pop() != Some(open) {
                    return false;
                }
            }
            _ => {}
        }
    }
    stack.is_empty() && quote.is_none()
}

/// [`read_array`] of the `.npy` file at `path`.
fn read_array_file(path: &Path, name: &str) -> Result<NdArray> {
    let (file, len) = open_file(path)?;
    read_array(file, len, path, name)
}

/// A buffered reader of the file at `path` and its length.
fn open_file(path: &Path) -> Result<(std::io::BufReader<std::fs::File>, u64)> {
    let file = std::fs::File::open(path).map_err(io_err(path))?;
    let len = file.metadata().map_err(io_err(path))?.len();
    Ok((std::io::BufReader::new(file), len))
}

/// The `'shape': (a, b, ...)` tuple of an `.npy` header dictionary.
fn header_shape(dict: &str) -> Option<Vec<u64>> {
    let rest = &dict[dict.find("'shape'").or_else(|| dict.find("\"shape\""))? + 7..];
    let open = rest.find('(')?;
    let close = open + rest[open..].find(')')?;
    rest[open + 1..close].split(',').map(str::trim).filter(|t| !t.is_empty()).map(|t| t.trim_end_matches('L').parse().ok()).collect()
}

/// Reads a problem: `.npz` (matrix and, if present, right-hand sides) or `.mtx` (matrix
/// only; `block` required).
pub fn read_problem<T: Scalar>(path: &Path, block: Option<usize>) -> Result<(BlockTridiag<T>, Option<BlockVec<T>>)> {
    match path.extension().and_then(|e| e.to_str()) {
        Some("npz") => read_npz(path),
        Some("mtx") => {
            let block = block.ok_or_else(|| format_err(path, "a Matrix Market file needs --block-size"))?;
            Ok((read_mtx(path, block)?, None))
        }
        _ => Err(format_err(path, "unknown file type: expected .npz or .mtx")),
    }
}

/// Reads `diag`, `sub` and optional `rhs` from an `.npz` archive. A problem with an
/// arrowhead (arrays `arrow` and `tip`) is an error here: [`read_arrow_npz`] reads it.
pub fn read_npz<T: Scalar>(path: &Path) -> Result<(BlockTridiag<T>, Option<BlockVec<T>>)> {
    if npz_has_arrow(path)? {
        return Err(format_err(path, "the problem has an arrowhead (arrays \"arrow\", \"tip\"): read it with io::read_arrow_npz"));
    }
    let mut get = npz_arrays(path)?;
    let (a, _) = read_chain(&mut get, path)?;
    let b = get("rhs")?.map(|r| rhs_from_array(&r, a.shape(), path)).transpose()?;
    Ok((a, b))
}

/// Whether the `.npz` archive at `path` holds an arrowhead (an array `arrow` or `tip`),
/// from its directory (no array is read).
pub fn npz_has_arrow(path: &Path) -> Result<bool> {
    let (zip, _) = open_npz(path)?;
    Ok(zip.file_names().any(|name| name == "arrow.npy" || name == "tip.npy"))
}

/// Reads an arrowhead problem from an `.npz` archive: `diag` and `sub` as in
/// [`read_npz`], `arrow` (`(N, a, n)` or `(S, N, a, n)`: `arrow[i] = A[tip, i]`), `tip`
/// (`(a, a)` or `(S, a, a)`) and optional `rhs` with `N n + a` rows (the tip's last).
/// Without `arrow` and `tip` the width is 0.
pub fn read_arrow_npz<T: Scalar>(path: &Path) -> Result<(BlockTridiagArrow<T>, Option<ArrowVec<T>>)> {
    let mut get = npz_arrays(path)?;
    let (chain, batched) = read_chain(&mut get, path)?;
    let sh = chain.shape();
    let (nb, n) = (sh.nblocks, sh.block);
    let with_batch = |rest: &[usize]| -> Vec<usize> { if batched { [&[sh.batch][..], rest].concat() } else { rest.to_vec() } };
    let (arrow, tip) = (get("arrow")?, get("tip")?);
    let width = match (&arrow, &tip) {
        (None, None) => 0,
        (Some(_), Some(t)) => *t.shape.last().unwrap_or(&0),
        _ => return Err(format_err(path, "an arrowhead needs both arrays \"arrow\" and \"tip\"")),
    };
    // Sizes come from the file's shapes, so nothing is reserved before they are checked
    // against arrays whose data the file holds.
    let (mut border, mut tips) = (Vec::new(), Vec::new());
    if let (Some(ar), Some(t)) = (&arrow, &tip) {
        for (name, arr, want) in [("arrow", ar, with_batch(&[nb, width, n])), ("tip", t, with_batch(&[width, width]))] {
            if arr.shape != want {
                return Err(format_err(path, format!("\"{name}\" has shape {:?}; expected {want:?}", arr.shape)));
            }
        }
        border.reserve_exact(ar.data.len());
        tips.reserve_exact(t.data.len());
        let at = |arr: &NdArray, s: usize, idx: &[usize]| if batched { arr.at(&[&[s][..], idx].concat()) } else { arr.at(idx) };
        for s in 0..sh.batch {
            for i in 0..nb {
                for c in 0..n {
                    border.extend((0..width).map(|r| cast::<T>(at(ar, s, &[i, r, c]))));
                }
            }
            for c in 0..width {
                tips.extend((0..width).map(|r| cast::<T>(at(t, s, &[r, c]))));
            }
        }
    }
    let m = BlockTridiagArrow::new(chain, width, border, tips)?;
    let b = match get("rhs")? {
        None => None,
        Some(r) => {
            let (k, values) = rhs_columns(&r, sh.batch, sh.dim() + width, path)?;
            let (d, rows) = (sh.dim(), sh.dim() + width);
            let mut chain_part = Vec::with_capacity(sh.batch * d * k);
            let mut tip_part = Vec::with_capacity(sh.batch * width * k);
            for col in values.chunks(rows) {
                chain_part.extend(col[..d].iter().map(|&v| cast::<T>(v)));
                tip_part.extend(col[d..].iter().map(|&v| cast::<T>(v)));
            }
            Some(ArrowVec::new(BlockVec::from_vec(sh, k, chain_part)?, width, tip_part)?)
        }
    };
    Ok((m, b))
}

/// The block-tridiagonal part of an `.npz` problem (`diag`, `sub`), and whether its
/// arrays carry a batch axis.
fn read_chain<T: Scalar>(get: &mut impl FnMut(&str) -> Result<Option<NdArray>>, path: &Path) -> Result<(BlockTridiag<T>, bool)> {
    let diag = get("diag")?.ok_or_else(|| format_err(path, "missing array \"diag\""))?;
    let sub = get("sub")?;
    let (batch, nb, n, batched) = match diag.shape.as_slice() {
        [nb, n, n2] if n == n2 => (1, *nb, *n, false),
        [s, nb, n, n2] if n == n2 => (*s, *nb, *n, true),
        other => return Err(format_err(path, format!("\"diag\" has shape {other:?}; expected (N, n, n) or (S, N, n, n)"))),
    };
    let shape = Shape::new(batch, nb, n).map_err(|e| format_err(path, e.to_string()))?;
    let mut a = BlockTridiag::zeros_padded(shape, n)?;
    let want_sub: Vec<usize> = if batched { vec![batch, nb - 1, n, n] } else { vec![nb - 1, n, n] };
    let sub = match sub {
        Some(s) if s.shape == want_sub || (nb == 1 && s.data.is_empty()) => Some(s),
        None if nb == 1 => None,
        Some(s) => return Err(format_err(path, format!("\"sub\" has shape {:?}; expected {want_sub:?}", s.shape))),
        None => return Err(format_err(path, "missing array \"sub\"")),
    };
    for s in 0..batch {
        for i in 0..nb {
            for c in 0..n {
                for r in 0..n {
                    let d = if batched { diag.at(&[s, i, r, c]) } else { diag.at(&[i, r, c]) };
                    a.diag_block_mut(s, i)[c * n + r] = cast(d);
                    if i + 1 < nb {
                        let sa = sub.as_ref().expect("checked above");
                        let v = if batched { sa.at(&[s, i, r, c]) } else { sa.at(&[i, r, c]) };
                        a.sub_block_mut(s, i)[c * n + r] = cast(v);
                    }
                }
            }
        }
    }
    Ok((a, batched))
}

/// The columns of an `rhs` array of `rows` rows: `(rows,)`, `(rows, k)` (one system) or
/// `(S, rows, k)`; returns `k` and the values, system by system, column by column.
fn rhs_columns(r: &NdArray, batch: usize, rows: usize, path: &Path) -> Result<(usize, Vec<f64>)> {
    let k = match r.shape.as_slice() {
        [d] if *d == rows && batch == 1 => 1,
        [d, k] if *d == rows && batch == 1 => *k,
        [s, d, k] if *d == rows && *s == batch => *k,
        other => {
            return Err(format_err(path, format!("\"rhs\" has shape {other:?}; expected ({rows},), ({rows}, k) or ({batch}, {rows}, k)")));
        }
    };
    if k == 0 {
        return Err(format_err(path, "\"rhs\" has no columns"));
    }
    let mut values = Vec::with_capacity(batch * rows * k);
    for s in 0..batch {
        for c in 0..k {
            values.extend((0..rows).map(|row| match r.shape.len() {
                1 => r.at(&[row]),
                2 => r.at(&[row, c]),
                _ => r.at(&[s, row, c]),
            }));
        }
    }
    Ok((k, values))
}

fn rhs_from_array<T: Scalar>(r: &NdArray, shape: Shape, path: &Path) -> Result<BlockVec<T>> {
    let (k, values) = rhs_columns(r, shape.batch, shape.dim(), path)?;
    BlockVec::from_vec(shape, k, values.into_iter().map(cast).collect())
}

/// Reads right-hand sides from a `.npy` (`(N n,)`, `(N n, k)` or `(S, N n, k)`).
pub fn read_rhs_npy<T: Scalar>(path: &Path, shape: Shape) -> Result<BlockVec<T>> {
    rhs_from_array(&read_array_file(path, "rhs")?, shape, path)
}

/// Writes a problem as `.npz` (C order, `f32` or `f64` as `T`).
pub fn write_npz<T: Scalar>(path: &Path, a: &BlockTridiag<T>, b: Option<&BlockVec<T>>) -> Result<()> {
    let rhs = b.map(|b| (a.shape().dim(), b.ncols(), rhs_c_order(b)));
    write_atomically(path, |tmp| write_problem_to(tmp, a, None, rhs))
}

/// Writes an arrowhead problem as `.npz`: `diag`, `sub`, `arrow`, `tip` (left out for
/// width 0) and, with `b`, `rhs` (`N n + a` rows, the tip's last), the layout
/// [`read_arrow_npz`] reads.
pub fn write_arrow_npz<T: Scalar>(path: &Path, m: &BlockTridiagArrow<T>, b: Option<&ArrowVec<T>>) -> Result<()> {
    let rhs = b.map(|b| {
        let (sh, k, a) = (m.shape(), b.chain().ncols(), m.width());
        let d = sh.dim();
        let value = |s, row, c| if row < d { b.chain().system(s)[c * d + row] } else { b.tip(s)[c * a + row - d] };
        (d + a, k, c_order(sh.batch, d + a, k, value))
    });
    write_atomically(path, |tmp| write_problem_to(tmp, m.chain(), Some(m), rhs))
}

/// The `.npz` writer of [`write_npz`] and [`write_arrow_npz`]: `rhs` as `(rows, k,
/// values in C order [s][row][c])`.
fn write_problem_to<T: Scalar>(
    path: &Path,
    a: &BlockTridiag<T>,
    arrow: Option<&BlockTridiagArrow<T>>,
    rhs: Option<(usize, usize, Vec<T>)>,
) -> Result<()> {
    let shape = a.shape();
    let (s, nb, n) = (shape.batch, shape.nblocks, shape.block);
    let batch_axis = |rest: &[u64]| -> Vec<u64> { if s > 1 { [&[s as u64][..], rest].concat() } else { rest.to_vec() } };
    let mut npz = npyz::npz::NpzWriter::create(path).map_err(io_err(path))?;
    // Stored, like `numpy.savez`: deflate ran at ~10 MB/s, and arrays over 4 GB need
    // the zip64 extension.
    let options = zip::write::FileOptions::default().compression_method(zip::CompressionMethod::Stored).large_file(true);
    let mut put = |name: &str, dims: Vec<u64>, values: Vec<T>| -> Result<()> {
        let mut w = npz.array::<T>(name, options).map_err(io_err(path))?.default_dtype().shape(&dims).begin_nd().map_err(io_err(path))?;
        w.extend(values).map_err(io_err(path))?;
        w.finish().map_err(io_err(path))
    };
    put("diag", batch_axis(&[nb as u64, n as u64, n as u64]), block_values(a, true))?;
    put("sub", batch_axis(&[(nb - 1) as u64, n as u64, n as u64]), block_values(a, false))?;
    if let Some(m) = arrow.filter(|m| m.width() > 0) {
        let w = m.width();
        // C order [s][i][r][c] of the a x n border blocks, [s][r][c] of the tips.
        let border = (0..s).flat_map(|sys| (0..nb).map(move |i| (sys, i))).flat_map(|(sys, i)| {
            let b = m.arrow_block(sys, i);
            (0..w).flat_map(move |r| (0..n).map(move |c| b[c * w + r]))
        });
        put("arrow", batch_axis(&[nb as u64, w as u64, n as u64]), border.collect())?;
        let tips = (0..s).flat_map(|sys| {
            let t = m.tip(sys);
            (0..w).flat_map(move |r| (0..w).map(move |c| t[c * w + r]))
        });
        put("tip", batch_axis(&[w as u64, w as u64]), tips.collect())?;
    }
    if let Some((rows, k, values)) = rhs {
        put("rhs", batch_axis(&[rows as u64, k as u64]), values)?;
    }
    Ok(())
}

/// Diagonal (or sub-diagonal) blocks in C order `[s][i][r][c]`.
fn block_values<T: Scalar>(a: &BlockTridiag<T>, diag: bool) -> Vec<T> {
    let shape = a.shape();
    let (n, ld) = (shape.block, a.ld());
    let count = if diag { shape.nblocks } else { shape.nblocks - 1 };
    let mut v = Vec::with_capacity(shape.batch * count * n * n);
    for sys in 0..shape.batch {
        for i in 0..count {
            let blk = if diag { a.diag_block(sys, i) } else { a.sub_block(sys, i) };
            for r in 0..n {
                for c in 0..n {
                    v.push(blk[c * ld + r]);
                }
            }
        }
    }
    v
}

fn rhs_c_order<T: Scalar>(b: &BlockVec<T>) -> Vec<T> {
    c_order(b.shape().batch, b.shape().dim(), b.ncols(), |s, row, c| b.get(s, row, c))
}

/// The values `value(s, row, c)` of `batch` matrices of `rows x k` in C order `[s][row][c]`.
fn c_order<T>(batch: usize, rows: usize, k: usize, value: impl Fn(usize, usize, usize) -> T) -> Vec<T> {
    let mut v = Vec::with_capacity(batch * rows * k);
    for s in 0..batch {
        for row in 0..rows {
            v.extend((0..k).map(|c| value(s, row, c)));
        }
    }
    v
}

/// Writes a solution as `.npy`: `(N n, k)`, or `(S, N n, k)` for a batch (C order).
pub fn write_npy<T: Scalar>(path: &Path, x: &BlockVec<T>) -> Result<()> {
    let shape = x.shape();
    let dims: Vec<u64> = if shape.batch > 1 {
        vec![shape.batch as u64, shape.dim() as u64, x.ncols() as u64]
    } else {
        vec![shape.dim() as u64, x.ncols() as u64]
    };
    write_npy_raw(path, &dims, rhs_c_order(x))
}

/// Writes values as an `.npy` array of shape `dims` (C order).
pub fn write_npy_raw<T: Scalar>(path: &Path, dims: &[u64], values: Vec<T>) -> Result<()> {
    write_atomically(path, |path| {
        let file = std::io::BufWriter::new(std::fs::File::create(path).map_err(io_err(path))?);
        let mut w = npyz::WriteOptions::new().default_dtype().shape(dims).writer(file).begin_nd().map_err(io_err(path))?;
        w.extend(values).map_err(io_err(path))?;
        w.finish().map_err(io_err(path))
    })
}

/// Checks, before any long work, that a result can be written to `path`: its directory
/// exists and accepts a new file (tried with an empty temporary file, removed again).
///
/// ```
/// let dir = std::env::temp_dir();
/// assert!(blocktri::io::check_writable(&dir.join("x.npy")).is_ok());
/// assert!(blocktri::io::check_writable(&dir.join("no-such-dir/x.npy")).is_err());
/// ```
pub fn check_writable(path: &Path) -> Result<()> {
    if path.is_dir() {
        return Err(format_err(path, "is a directory; give a file name for the output"));
    }
    let tmp = temp_sibling(path);
    std::fs::File::create(&tmp).map_err(io_err(path))?;
    std::fs::remove_file(&tmp).map_err(io_err(&tmp))
}

/// A fresh name next to `path` for a temporary file (same directory, so a rename is atomic).
fn temp_sibling(path: &Path) -> std::path::PathBuf {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
    path.with_file_name(format!(".{name}.{}.{n}.tmp", std::process::id()))
}

/// Runs `write` on a temporary file next to `path` and renames it into place when it
/// succeeds; on any failure the temporary file is removed, so an existing file at `path`
/// stays as it was and no partial file is left.
pub(crate) fn write_atomically(path: &Path, write: impl FnOnce(&Path) -> Result<()>) -> Result<()> {
    let tmp = temp_sibling(path);
    let result = write(&tmp).and_then(|()| std::fs::rename(&tmp, path).map_err(io_err(path)));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// `bytes` into `path` through [`write_atomically`].
#[cfg_attr(not(feature = "bench"), allow(dead_code))] // the benchmark's reports
pub(crate) fn write_bytes_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomically(path, |tmp| std::fs::write(tmp, bytes).map_err(io_err(tmp)))
}

/// Reads a `.npy` array of floats (`f32` or `f64`, any shape, C or Fortran order): its
/// values in row-major (C) order, as `f64`, and its shape.
///
/// ```no_run
/// let (x, shape) = blocktri::io::read_npy(std::path::Path::new("x.npy"))?;
/// assert_eq!(x.len(), shape.iter().product::<usize>());
/// # Ok::<(), blocktri::Error>(())
/// ```
pub fn read_npy(path: &Path) -> Result<(Vec<f64>, Vec<usize>)> {
    let arr = read_array_file(path, "array")?;
    let shape = arr.shape.clone();
    Ok((arr.into_c_order(), shape))
}

/// Reads a batch of tridiagonal matrices from an `.npz` with arrays `a` (diagonal, `(n,)`
/// or `(S, n)`), `b` (sub-diagonal) and `c` (super-diagonal), each `(n - 1,)` or
/// `(S, n - 1)`; C or Fortran order, `f32` or `f64`.
///
/// ```no_run
/// let t = blocktri::io::read_tridiagonal::<f64>(std::path::Path::new("matrices.npz"))?;
/// println!("{} matrices of size {}", t.batch_size(), t.n());
/// # Ok::<(), blocktri::Error>(())
/// ```
pub fn read_tridiagonal<T: Scalar>(path: &Path) -> Result<crate::tridiag::Tridiagonal<T>> {
    let mut get = npz_arrays(path)?;
    let mut vector = |name: &str| -> Result<NdArray> {
        let arr = get(name)?.ok_or_else(|| format_err(path, format!("missing array {name:?} (needs a, b and c)")))?;
        match arr.shape.len() {
            1 | 2 => Ok(arr),
            _ => Err(format_err(path, format!("array {name:?} has shape {:?}; expected (n,) or (S, n)", arr.shape))),
        }
    };
    let (a, b, c) = (vector("a")?, vector("b")?, vector("c")?);
    let n = *a.shape.last().expect("1 or 2 axes");
    // b and c: a's shape with one entry fewer on the last axis.
    let mut want = a.shape.clone();
    *want.last_mut().expect("1 or 2 axes") = n.saturating_sub(1);
    for (name, arr) in [("b", &b), ("c", &c)] {
        // n = 1 has empty off-diagonals, which numpy may save with any shape of size 0.
        if arr.shape != want && !(n == 1 && arr.data.is_empty()) {
            return Err(format_err(path, format!("array {name:?} has shape {:?}; expected {:?} to match \"a\"", arr.shape, want)));
        }
    }
    let values = |arr: NdArray| arr.into_c_order().into_iter().map(cast::<T>).collect();
    crate::tridiag::Tridiagonal::batch(n, values(a), values(b), values(c)).map_err(|e| format_err(path, e.to_string()))
}

/// Reads a Matrix Market file (`coordinate` or `array`; `real`, `double` or `integer`;
/// `general` or `symmetric`) as a one-system block-tridiagonal matrix with block size
/// `block`. Every count the file declares is checked against what it holds before
/// anything is allocated for it; a malformed line is reported with its number.
pub fn read_mtx<T: Scalar>(path: &Path, block: usize) -> Result<BlockTridiag<T>> {
    let bytes = std::fs::read(path).map_err(io_err(path))?;
    let coo = parse_mtx(&bytes).map_err(|msg| format_err(path, msg))?;
    let a = BlockTridiag::<f64>::from_coo(&coo, block).map_err(|e| format_err(path, e.to_string()))?;
    Ok(a.cast())
}

/// The entries of a Matrix Market file (see [`read_mtx`]), 0-based.
fn parse_mtx(bytes: &[u8]) -> std::result::Result<nalgebra_sparse::CooMatrix<f64>, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "not a text file (invalid UTF-8)".to_string())?;
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l));
    let (_, header) = lines.next().ok_or("empty file")?;
    let words: Vec<String> = header.split_whitespace().map(str::to_ascii_lowercase).collect();
    let [banner, object, format, field, symmetry] = words.as_slice() else {
        return Err(format!("line 1: not a Matrix Market header: {:?}", header.trim()));
    };
    if banner != "%%matrixmarket" || object != "matrix" {
        return Err(format!("line 1: not a Matrix Market matrix header: {:?}", header.trim()));
    }
    if !matches!(field.as_str(), "real" | "double" | "integer") {
        return Err(format!(
            "line 1: field {field:?} is not supported (real, double, integer): a positive definite matrix has real values"
        ));
    }
    let symmetric = match symmetry.as_str() {
        "general" => false,
        "symmetric" => true,
        other => return Err(format!("line 1: symmetry {other:?} is not supported (general, symmetric)")),
    };
    let coordinate = match format.as_str() {
        "coordinate" => true,
        "array" => false,
        other => return Err(format!("line 1: format {other:?} is not supported (coordinate, array)")),
    };
    // Data lines: everything but comments and blank lines.
    let mut data = lines.filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('%'));
    let (at, size_line) = data.next().ok_or("no size line")?;
    let size: Vec<usize> = size_line
        .split_whitespace()
        .map(|w| w.parse().map_err(|_| format!("line {at}: bad size {w:?}")))
        .collect::<std::result::Result<_, _>>()?;
    let (rows, cols, declared) = match (coordinate, size.as_slice()) {
        (true, &[r, c, nnz]) => (r, c, nnz),
        (false, &[r, c]) => {
            // Column-major values: all of them, or the lower triangle when symmetric.
            let count = if symmetric { r.checked_mul(r.saturating_add(1)).map(|v| v / 2) } else { r.checked_mul(c) };
            (r, c, count.ok_or_else(|| format!("line {at}: a {r} x {c} array overflows"))?)
        }
        _ => {
            return Err(format!(
                "line {at}: expected {} numbers on the size line",
                if coordinate { "3 (rows cols entries)" } else { "2 (rows cols)" }
            ));
        }
    };
    if rows != cols || rows == 0 {
        return Err(format!("line {at}: the matrix is {rows} x {cols}; a positive definite matrix is square and not empty"));
    }
    // Each entry takes at least two bytes ("0\n"): a count beyond that is a lie, found
    // before the entry vectors are sized by it.
    if declared > bytes.len() / 2 {
        return Err(format!("line {at}: declares {declared} entries, the file ({} bytes) cannot hold them", bytes.len()));
    }
    let (mut r, mut c, mut v) = (Vec::with_capacity(declared), Vec::with_capacity(declared), Vec::with_capacity(declared));
    let (mut count, mut next) = (0, (0usize, 0usize));
    for (at, line) in data {
        if count == declared {
            return Err(format!("line {at}: more entries than the {declared} declared"));
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        let value_word = if coordinate {
            let [i, j, value] = words.as_slice() else {
                return Err(format!("line {at}: expected `row column value`, got {:?}", line.trim()));
            };
            let index = |w: &str, bound: usize| -> std::result::Result<usize, String> {
                match w.parse::<usize>() {
                    Ok(k) if (1..=bound).contains(&k) => Ok(k - 1),
                    _ => Err(format!("line {at}: index {w:?} is not in 1..={bound}")),
                }
            };
            r.push(index(i, rows)?);
            c.push(index(j, cols)?);
            *value
        } else {
            let [value] = words.as_slice() else { return Err(format!("line {at}: expected one value, got {:?}", line.trim())) };
            // Column-major order (down the lower triangle's columns if symmetric).
            let (i, j) = next;
            r.push(i);
            c.push(j);
            next = if i + 1 < rows { (i + 1, j) } else { (if symmetric { j + 1 } else { 0 }, j + 1) };
            *value
        };
        v.push(value_word.parse::<f64>().map_err(|_| format!("line {at}: bad value {value_word:?}"))?);
        count += 1;
    }
    if count < declared {
        return Err(format!("the file ends after {count} of the {declared} declared entries"));
    }
    nalgebra_sparse::CooMatrix::try_from_triplets(rows, cols, r, c, v).map_err(|e| e.to_string())
}

/// Writes system `s` as Matrix Market `coordinate real symmetric` (lower triangle).
pub fn write_mtx<T: Scalar>(path: &Path, a: &BlockTridiag<T>, s: usize) -> Result<()> {
    write_atomically(path, |tmp| write_mtx_to(tmp, a, s))
}

fn write_mtx_to<T: Scalar>(path: &Path, a: &BlockTridiag<T>, s: usize) -> Result<()> {
    use std::io::Write;
    let csr = a.to_csr(s, true);
    let mut w = std::io::BufWriter::new(std::fs::File::create(path).map_err(io_err(path))?);
    let d = a.shape().dim();
    let mut text = format!(
        "%%MatrixMarket matrix coordinate real symmetric\n% block-tridiagonal, N = {}, n = {}\n{d} {d} {}\n",
        a.shape().nblocks,
        a.shape().block,
        csr.nnz()
    );
    for (r, c, &v) in csr.triplet_iter() {
        text.push_str(&format!("{} {} {:.17e}\n", r + 1, c + 1, wide(v)));
    }
    w.write_all(text.as_bytes()).map_err(io_err(path))?;
    w.flush().map_err(io_err(path))
}

#[cfg(test)]
mod header_tests {
    use super::brackets_plausible;

    #[test]
    fn npy_headers_with_runaway_brackets_are_refused_before_parsing() {
        assert!(brackets_plausible("{'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }"));
        assert!(brackets_plausible("{'descr': '<f4', 'fortran_order': True, 'shape': (), 'x': '(((['}"));
        // The inputs that held npyz's parser for minutes (fuzzing found them).
        assert!(!brackets_plausible(&format!("{{'shape': (1,), 'x': {}}}", "{".repeat(30))));
        assert!(!brackets_plausible(&format!("{{'shape': (1,), 'x': {}}}", "(1,".repeat(20))));
        assert!(!brackets_plausible("{'shape': (1,)"));
        assert!(!brackets_plausible("{'shape': (1,]}"));
    }
}
