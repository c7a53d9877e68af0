//! File formats and the command line: problems written by numpy and scipy
//! (`tests/data/make_fixtures.py`) are read in C and Fortran order and from Matrix Market,
//! solved to numpy's solution; our writers round-trip; the `blocktri` binary solves files,
//! writes `.npy`, and fails bad input with a one-line message and a non-zero exit code.

mod common;

use blocktri::cpu::SequentialCholesky;
use blocktri::{BlockTridiag, BlockVec, Error, Factorization, io, residual};
use common::{fresh_seed, problem};
use std::path::{Path, PathBuf};
#[cfg(feature = "cli")]
use std::process::Command;

/// A fixture: under this checkout, or under the current directory (the repository root on
/// the GPU machine, where the test executables run from another path).
fn data(name: &str) -> PathBuf {
    let built_here = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let dir = if built_here.exists() { built_here } else { PathBuf::from("tests/data") };
    dir.join(name)
}

/// Matrix Market: the array format (general and symmetric) reads as the coordinate one;
/// every lie or malformed line is a format error naming the line.
#[test]
fn matrix_market_formats_and_malformed_files() {
    let dir = tempfile::tempdir().unwrap();
    let read = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        io::read_mtx::<f64>(&p, 2)
    };
    // A 4 x 4 block-tridiagonal matrix (n = 2), three ways.
    let coordinate =
        read("c.mtx", "%%MatrixMarket matrix coordinate real symmetric\n% comment\n4 4 6\n1 1 4\n2 1 1\n2 2 4\n3 2 -1\n3 3 4\n4 4 4\n")
            .unwrap();
    let general =
        read("g.mtx", "%%MatrixMarket matrix array real general\n4 4\n4\n1\n0\n0\n1\n4\n-1\n0\n0\n-1\n4\n0\n0\n0\n0\n4\n").unwrap();
    let symmetric = read("s.mtx", "%%MatrixMarket matrix array integer symmetric\n4 4\n4\n1\n0\n0\n4\n-1\n0\n4\n0\n4\n").unwrap();
    for other in [&general, &symmetric] {
        assert_eq!(other.diag(), coordinate.diag());
        assert_eq!(other.sub(), coordinate.sub());
    }
    assert_eq!(coordinate.sub_block(0, 0), &[0.0, 0.0, -1.0, 0.0]); // A[2, 1] = -1 (0-based)
    let h = "%%MatrixMarket matrix coordinate real general\n";
    let cases: &[(&str, &str)] = &[
        (&format!("{h}2 2 433333333333333333333333333333\n1 1 4\n"), "line 2"), // overflowing count (a fuzzing finding)
        (&format!("{h}2 2 400\n1 1 4\n"), "cannot hold"),
        (&format!("{h}2 2 3\n1 1 4\n2 2 4\n"), "ends after 2 of the 3"),
        (&format!("{h}2 2 1\n1 1 4\n2 2 4\n"), "line 4: more entries"),
        (&format!("{h}2 2 1\n3 1 4\n"), "line 3: index \"3\""),
        (&format!("{h}2 2 1\n1 1 four\n"), "line 3: bad value"),
        (&format!("{h}2 3 1\n1 1 4\n"), "2 x 3"),
        ("%%MatrixMarket matrix coordinate complex general\n2 2 1\n1 1 4 0\n", "complex"),
        ("%%MatrixMarket matrix coordinate real skew-symmetric\n2 2 0\n", "skew-symmetric"),
        ("%%MatrixMarket matrix array real general\n2 2\n1\n", "ends after 1 of the 4"),
        ("not a header\n", "line 1"),
    ];
    for (i, (text, needle)) in cases.iter().enumerate() {
        match read(&format!("bad{i}.mtx"), text) {
            Err(Error::Format { msg, .. }) => assert!(msg.contains(needle), "case {i}: {msg}"),
            other => panic!("case {i}: expected a format error, got {other:?}"),
        }
    }
}

#[cfg(feature = "cli")] // the binary is built with the `cli` feature
/// The `blocktri` binary: cargo's, or the carried one in `.gpu/bin` on the GPU machine.
fn blocktri_exe() -> PathBuf {
    let built = PathBuf::from(env!("CARGO_BIN_EXE_blocktri"));
    if built.exists() { built } else { PathBuf::from(".gpu/bin/blocktri") }
}

/// numpy's solution of the fixture, `N n x k` in C order.
fn numpy_solution() -> Vec<f64> {
    io::read_npy(&data("solution.npy")).unwrap().0
}

fn max_diff_to_numpy<T: blocktri::Scalar>(x: &BlockVec<T>) -> f64 {
    let reference = numpy_solution();
    let (d, k) = (x.shape().dim(), x.ncols());
    assert_eq!(reference.len(), d * k);
    let mut worst = 0.0f64;
    for row in 0..d {
        for c in 0..k {
            worst = worst.max((x.get(0, row, c).to_f64() - reference[row * k + c]).abs());
        }
    }
    worst
}

#[test]
fn numpy_c_and_fortran_order_read_the_same_and_solve_to_numpys_solution() {
    let (ac, bc) = io::read_npz::<f64>(&data("numpy_c.npz")).unwrap();
    let (af, bf) = io::read_npz::<f64>(&data("numpy_f.npz")).unwrap();
    let (bc, bf) = (bc.expect("rhs in the archive"), bf.expect("rhs in the archive"));
    assert_eq!((ac.shape().nblocks, ac.shape().block, bc.ncols()), (6, 3, 2));
    assert_eq!(ac.to_dense(0), af.to_dense(0));
    assert_eq!(bc.as_slice(), bf.as_slice());
    let mut solver = SequentialCholesky::new();
    solver.factor(&ac).unwrap();
    let x = solver.solve(&bc).unwrap();
    assert!(max_diff_to_numpy(&x) < 1e-12);

    // The float32 archive, read as f32 and as f64.
    let (a32, b32) = io::read_npz::<f32>(&data("numpy_f32.npz")).unwrap();
    let mut s32 = SequentialCholesky::<f32>::new();
    s32.factor(&a32).unwrap();
    assert!(max_diff_to_numpy(&s32.solve(&b32.unwrap()).unwrap()) < 1e-4);
    assert!(io::read_npz::<f64>(&data("numpy_f32.npz")).is_ok());
}

#[test]
fn scipy_matrix_market_matches_the_npz() {
    let (a, b) = io::read_npz::<f64>(&data("numpy_c.npz")).unwrap();
    let m = io::read_problem::<f64>(&data("scipy.mtx"), Some(3)).unwrap().0;
    assert!((m.to_dense(0) - a.to_dense(0)).abs().max() < 1e-14);
    let rhs = io::read_rhs_npy::<f64>(&data("rhs.npy"), m.shape()).unwrap();
    assert_eq!(rhs.as_slice(), b.unwrap().as_slice());
    // A Matrix Market file needs the block size; 18 is not a multiple of 4.
    assert!(matches!(io::read_problem::<f64>(&data("scipy.mtx"), None), Err(Error::Format { .. })));
    assert!(io::read_mtx::<f64>(&data("scipy.mtx"), 4).is_err());
}

#[test]
fn our_writers_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let seed = fresh_seed();
    let (a, b) = problem::<f64>(1, 5, 4, 3, seed);
    let npz = dir.path().join("p.npz");
    io::write_npz(&npz, &a, Some(&b)).unwrap();
    let (a2, b2) = io::read_npz::<f64>(&npz).unwrap();
    assert_eq!(a2.to_dense(0), a.to_dense(0));
    assert_eq!(b2.unwrap().as_slice(), b.as_slice());

    // Batches keep their systems apart.
    let (ab, bb) = problem::<f32>(3, 4, 2, 1, seed + 1);
    io::write_npz(&npz, &ab, Some(&bb)).unwrap();
    let (ab2, bb2) = io::read_npz::<f32>(&npz).unwrap();
    for s in 0..3 {
        assert_eq!(ab2.to_dense(s), ab.to_dense(s));
    }
    assert_eq!(bb2.unwrap().as_slice(), bb.as_slice());

    let mtx = dir.path().join("p.mtx");
    io::write_mtx(&mtx, &a, 0).unwrap();
    let a3: BlockTridiag<f64> = io::read_mtx(&mtx, 4).unwrap();
    assert!((a3.to_dense(0) - a.to_dense(0)).abs().max() < 1e-15 * a.norm_fro(0));

    let npy = dir.path().join("x.npy");
    io::write_npy(&npy, &b).unwrap();
    assert_eq!(io::read_rhs_npy::<f64>(&npy, b.shape()).unwrap().as_slice(), b.as_slice());
}

#[test]
fn malformed_files_are_format_or_io_errors() {
    let dir = tempfile::tempdir().unwrap();
    assert!(matches!(io::read_npz::<f64>(&dir.path().join("missing.npz")), Err(Error::Io { .. })));
    let txt = dir.path().join("p.txt");
    std::fs::write(&txt, "1 2 3").unwrap();
    assert!(matches!(io::read_problem::<f64>(&txt, None), Err(Error::Format { .. })));
    // An archive without "diag".
    let npz = dir.path().join("empty.npz");
    let (a, _) = problem::<f64>(1, 2, 2, 1, 1);
    io::write_npz(&npz, &a, None).unwrap();
    let rhs_wrong = dir.path().join("rhs.npy");
    io::write_npy_raw(&rhs_wrong, &[5], vec![1.0f64; 5]).unwrap();
    assert!(matches!(io::read_rhs_npy::<f64>(&rhs_wrong, a.shape()), Err(Error::Format { .. })));
}

/// An `.npy` (version 1, little-endian f64, C order) with the header's shape given as text
/// and whatever data bytes follow.
fn npy_with_header(shape: &str, data: &[u8]) -> Vec<u8> {
    let mut dict = format!("{{'descr': '<f8', 'fortran_order': False, 'shape': {shape}, }}");
    while (10 + dict.len() + 1) % 64 != 0 {
        dict.push(' ');
    }
    dict.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out.extend_from_slice(data);
    out
}

fn format_message(r: Result<impl std::fmt::Debug, Error>) -> String {
    match r {
        Err(e @ Error::Format { .. }) => e.to_string(),
        other => panic!("expected a format error, got {other:?}"),
    }
}

#[test]
fn npy_headers_that_lie_are_refused_before_allocating() {
    let dir = tempfile::tempdir().unwrap();
    let npy = dir.path().join("x.npy");
    let eight_values: Vec<u8> = (0..8).flat_map(|i| f64::from(i).to_le_bytes()).collect();
    // The honest file reads.
    std::fs::write(&npy, npy_with_header("(2, 4)", &eight_values)).unwrap();
    assert_eq!(io::read_npy(&npy).unwrap(), ((0..8).map(f64::from).collect(), vec![2, 4]));
    // Declares 8 TB, holds 64 bytes: named, with the shape and the bytes present.
    std::fs::write(&npy, npy_with_header("(1000000, 1000000)", &eight_values)).unwrap();
    let msg = format_message(io::read_npy(&npy));
    assert!(msg.contains("[1000000, 1000000]") && msg.contains("8000000000000 bytes") && msg.contains("holds 64"), "{msg}");
    // One value short.
    std::fs::write(&npy, npy_with_header("(3, 3)", &eight_values)).unwrap();
    assert!(format_message(io::read_npy(&npy)).contains("declares 72 bytes"));
    // An element count that overflows 64 bits.
    std::fs::write(&npy, npy_with_header("(4294967296, 4294967296, 16)", &eight_values)).unwrap();
    assert!(format_message(io::read_npy(&npy)).contains("overflows"));
    // A header longer than the file, and a file cut inside the preamble.
    let mut cut = npy_with_header("(2, 4)", &[]);
    cut.truncate(40);
    std::fs::write(&npy, &cut).unwrap();
    assert!(format_message(io::read_npy(&npy)).contains("does not fit"));
    std::fs::write(&npy, &cut[..7]).unwrap();
    assert!(format_message(io::read_npy(&npy)).contains("too short"));
    // The same lie inside an .npz (stored, as numpy.savez writes), and for the rhs reader.
    let npz = dir.path().join("p.npz");
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&npz).unwrap());
    let stored = zip::write::FileOptions::default().compression_method(zip::CompressionMethod::Stored);
    zip.start_file("diag.npy", stored).unwrap();
    std::io::Write::write_all(&mut zip, &npy_with_header("(100000, 300, 300)", &eight_values)).unwrap();
    zip.finish().unwrap();
    let msg = format_message(io::read_npz::<f64>(&npz));
    assert!(msg.contains("\"diag\"") && msg.contains("[100000, 300, 300]"), "{msg}");
    std::fs::write(&npy, npy_with_header("(1000000000,)", &eight_values)).unwrap();
    let shape = blocktri::Shape::new(1, 2, 2).unwrap();
    assert!(format_message(io::read_rhs_npy::<f64>(&npy, shape)).contains("\"rhs\""));
}

#[test]
fn outputs_are_never_half_written() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = problem::<f64>(1, 3, 2, 1, fresh_seed());
    let listing = || {
        let mut names: Vec<String> =
            std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        names
    };
    // A missing directory: refused up front, nothing created.
    let missing = dir.path().join("no-such-dir").join("x.npy");
    assert!(matches!(io::check_writable(&missing), Err(Error::Io { .. })));
    assert!(io::write_npy(&missing, &b).is_err());
    // A target that cannot be replaced (a non-empty directory): the write fails after the
    // data went to the temporary file; the directory stays, no temporary file is left.
    let blocked = dir.path().join("blocked.npz");
    std::fs::create_dir(&blocked).unwrap();
    std::fs::write(blocked.join("keep"), "old").unwrap();
    assert!(matches!(io::check_writable(&blocked), Err(Error::Format { .. })));
    assert!(io::write_npz(&blocked, &a, Some(&b)).is_err());
    assert!(io::write_mtx(&blocked, &a, 0).is_err());
    assert_eq!(std::fs::read_to_string(blocked.join("keep")).unwrap(), "old");
    assert_eq!(listing(), vec!["blocked.npz".to_string()]);
    // A successful write replaces an existing file whole.
    let out = dir.path().join("x.npy");
    std::fs::write(&out, "old contents").unwrap();
    io::write_npy(&out, &b).unwrap();
    assert_eq!(io::read_rhs_npy::<f64>(&out, b.shape()).unwrap().as_slice(), b.as_slice());
    assert_eq!(listing(), vec!["blocked.npz".to_string(), "x.npy".to_string()]);
    // The CLI checks its output before solving: one line, non-zero exit, nothing written.
    #[cfg(feature = "cli")]
    {
        let bad = missing.to_string_lossy().into_owned();
        let (ok, _, err) = blocktri(&["solve", "--generate", "3,2", "--backend", "cpu", "--out", &bad]);
        assert!(!ok && err.trim().lines().count() == 1 && err.contains("no-such-dir"), "{err}");
    }
}

#[cfg(feature = "cli")] // the binary is built with the `cli` feature
fn blocktri(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(blocktri_exe()).args(args).output().unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[cfg(feature = "cli")] // the binary is built with the `cli` feature
/// The residual the CLI printed.
fn printed_residual(stdout: &str) -> f64 {
    let line = stdout.lines().find(|l| l.contains("relative residual")).expect("residual line");
    let value = line.split('=').nth(1).expect("value").split(',').next().expect("number");
    value.trim().parse().expect("a number")
}

#[cfg(feature = "cli")] // the binary is built with the `cli` feature
#[test]
fn cli_solves_numpy_and_scipy_files() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.npy");
    for backend in ["cpu", "cpu-sequential", "auto"] {
        let (ok, stdout, stderr) =
            blocktri(&["solve", data("numpy_f.npz").to_str().unwrap(), "--backend", backend, "--out", out.to_str().unwrap()]);
        assert!(ok, "{stdout}\n{stderr}");
        assert!(printed_residual(&stdout) < 1e-10, "{stdout}");
        let x = io::read_npy(&out).unwrap().0;
        let reference = numpy_solution();
        assert!(x.iter().zip(&reference).all(|(a, b)| (a - b).abs() < 1e-12));
    }
    let (ok, stdout, stderr) =
        blocktri(&["solve", data("scipy.mtx").to_str().unwrap(), "--block-size", "3", "--rhs", data("rhs.npy").to_str().unwrap()]);
    assert!(ok, "{stdout}\n{stderr}");
    assert!(printed_residual(&stdout) < 1e-10);
    let (ok, stdout, _) = blocktri(&["solve", data("numpy_c.npz").to_str().unwrap(), "--precision", "f32", "--backend", "cpu"]);
    assert!(ok && printed_residual(&stdout) < 1e-5, "{stdout}");
}

#[cfg(feature = "cli")] // the binary is built with the `cli` feature
#[test]
fn cli_generates_and_solves() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("k.npz");
    let (ok, stdout, stderr) =
        blocktri(&["generate", "--kind", "kalman", "--nblocks", "50", "--block-size", "4", "--obs", "2", "--out", p.to_str().unwrap()]);
    assert!(ok, "{stdout}\n{stderr}");
    let (ok, stdout, stderr) = blocktri(&["solve", p.to_str().unwrap(), "--backend", "cpu"]);
    assert!(ok && printed_residual(&stdout) < 1e-10, "{stdout}\n{stderr}");
    let (ok, stdout, _) = blocktri(&["solve", "--generate", "3,100,5", "--nrhs", "2", "--backend", "cpu"]);
    assert!(ok && printed_residual(&stdout) < 1e-10, "{stdout}");
    // --logdet prints one value per system: those of the generated matrices (seed 1).
    let (ok, stdout, _) = blocktri(&["solve", "--generate", "2,40,3", "--backend", "cpu", "--logdet"]);
    assert!(ok, "{stdout}");
    let line = stdout.lines().find(|l| l.starts_with("log det A = ")).expect("a log det line");
    let printed: Vec<f64> = line["log det A = ".len()..].split(", ").map(|v| v.parse().unwrap()).collect();
    let a = blocktri::generate::random_spd::<f64>(2, 40, 3, 1).unwrap();
    for (s, got) in printed.iter().enumerate() {
        let want: f64 = a.to_dense(s).cholesky().unwrap().l().diagonal().iter().map(|d| 2.0 * d.ln()).sum();
        assert!((got - want).abs() < 1e-9 * want.abs(), "system {s}: {got} vs {want}");
    }
    assert_eq!(printed.len(), 2);
}

#[cfg(feature = "cli")] // the binary is built with the `cli` feature
#[test]
fn cli_warns_before_an_inaccurate_answer() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("c.npz");
    let path = p.to_str().unwrap();
    let (ok, _, stderr) =
        blocktri(&["generate", "--kind", "conditioned", "--kappa", "1e5", "--nblocks", "20", "--block-size", "3", "--out", path]);
    assert!(ok, "{stderr}");
    // f32: 1e5 x 6e-8 = 6e-3 > 1e-6, a warning naming the system and suggesting f64.
    let (ok, stdout, stderr) = blocktri(&["solve", path, "--precision", "f32", "--backend", "cpu"]);
    assert!(ok, "{stdout}\n{stderr}");
    let warning: Vec<&str> = stderr.lines().filter(|l| l.starts_with("warning")).collect();
    assert_eq!(warning.len(), 1, "{stderr}");
    assert!(warning[0].contains("system 0") && warning[0].contains("f64"), "{stderr}");
    assert!(stdout.contains("condition number estimate"), "{stdout}");
    // f64: 1e5 x 1.1e-16 is far below 1e-6, no warning.
    let (ok, stdout, stderr) = blocktri(&["solve", path, "--backend", "cpu"]);
    assert!(ok && !stderr.contains("warning"), "{stdout}\n{stderr}");
}

#[cfg(feature = "cli")] // the binary is built with the `cli` feature
#[test]
fn cli_writes_the_selected_inverse() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sigma.npz");
    for backend in ["cpu", "cpu-sequential"] {
        let (ok, stdout, stderr) =
            blocktri(&["selinv", data("numpy_c.npz").to_str().unwrap(), "--backend", backend, "--out", out.to_str().unwrap()]);
        assert!(ok, "{stdout}\n{stderr}");
        let (sigma, _) = io::read_npz::<f64>(&out).unwrap();
        let (a, _) = io::read_npz::<f64>(&data("numpy_c.npz")).unwrap();
        let inv = a.to_dense(0).try_inverse().unwrap();
        let n = a.shape().block;
        for c in 0..inv.ncols() {
            for r in (c / n) * n..((c / n + 2) * n).min(inv.nrows()) {
                assert!((sigma.get(0, r, c) - inv[(r, c)]).abs() < 1e-12 * inv.amax(), "{backend} ({r}, {c})");
            }
        }
    }
}

#[cfg(feature = "cli")] // the binary is built with the `cli` feature
#[test]
fn cli_reports_bad_input_in_one_line_without_a_panic() {
    let (indefinite, mtx, missing) = (data("indefinite.npz"), data("scipy.mtx"), data("missing.npz"));
    let (indefinite, mtx, missing) = (indefinite.to_str().unwrap(), mtx.to_str().unwrap(), missing.to_str().unwrap());
    // A report directory under a file: refused before any measurement.
    let under_a_file = data("rhs.npy").join("reports");
    let under_a_file = under_a_file.to_str().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["solve", indefinite, "--backend", "cpu-sequential"], "system 0, block 4"),
        (&["solve", indefinite, "--backend", "cpu"], "system 0, block 4"),
        (&["solve", mtx], "--block-size"),
        (&["solve", "--generate", "10,0"], "n"),
        (&["solve", "--generate", "ten,4"], "--generate"),
        (&["solve", missing], "missing.npz"),
        (&["solve", "--generate", "10,4", "--precision", "f16"], "f16"),
        (&["solve", "--generate", "10,4", "--backend", "tpu"], "tpu"),
        (&["bench", "--out-dir", under_a_file], "rhs.npy"),
        (&["bench", "--refine-tolerances", "1e-12,2"], "between 0 and 1"),
        (&["bench", "--refine-tolerances", "tiny"], "not a number"),
        (&["bench", "--max-gb", "0"], "positive number of gigabytes"),
        (&["bench", "--max-gb", "lots"], "positive number of gigabytes"),
    ];
    for (args, needle) in cases {
        let (ok, stdout, stderr) = blocktri(args);
        assert!(!ok, "{args:?} succeeded: {stdout}");
        assert!(!stderr.contains("panicked") && !stderr.contains("RUST_BACKTRACE"), "{args:?}: {stderr}");
        let message: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error")).collect();
        assert_eq!(message.len(), 1, "{args:?}: {stderr}");
        assert!(message[0].contains(needle), "{args:?}: {stderr}");
    }
}

#[test]
fn residual_helpers_agree_with_the_definition() {
    let (a, b) = problem::<f64>(2, 7, 3, 2, fresh_seed());
    let mut s = SequentialCholesky::new();
    s.factor(&a).unwrap();
    let x = s.solve(&b).unwrap();
    let acc = residual::accuracy(&a, &x, &b).unwrap();
    assert!(acc.relative_residual < 1e-13 && acc.backward_error < 1e-13);
    // A wrong solution has a large residual.
    let zero = BlockVec::zeros(a.shape(), 2).unwrap();
    assert!((residual::accuracy(&a, &zero, &b).unwrap().relative_residual - 1.0).abs() < 1e-12);
}

/// numpy's inverses of the tridiagonal fixture, `(S, n, n)` in C order.
fn numpy_tridiagonal_inverse() -> (Vec<f64>, Vec<usize>) {
    let (inv, shape) = io::read_npy(&data("tridiag_inverse.npy")).unwrap();
    assert_eq!(shape, [3, 7, 7]);
    (inv, shape)
}

#[test]
fn numpy_float32_fortran_tridiagonals_read_and_invert_to_numpys_inverse() {
    use blocktri::tridiag::{Method, invert};
    let (reference, shape) = numpy_tridiagonal_inverse();
    let n = shape[1];
    let t = io::read_tridiagonal::<f64>(&data("tridiag_f32_f.npz")).unwrap();
    assert_eq!((t.batch_size(), t.n()), (3, 7));
    let x = invert(&t, Method::Sequential, true).unwrap();
    for k in 0..t.batch_size() {
        // Ours is column-major, numpy's row-major.
        let ours = x.matrix(k);
        for i in 0..n {
            for j in 0..n {
                let want = reference[(k * n + i) * n + j];
                assert!((ours[j * n + i] - want).abs() < 1e-12, "matrix {k} entry ({i}, {j}): {} vs {want}", ours[j * n + i]);
            }
        }
    }
    // Missing arrays and mismatched lengths are format errors naming the array.
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.npz");
    io::write_npz(&bad, &problem::<f64>(1, 3, 2, 1, fresh_seed()).0, None).unwrap();
    match io::read_tridiagonal::<f64>(&bad) {
        Err(Error::Format { msg, .. }) => assert!(msg.contains("\"a\""), "{msg}"),
        other => panic!("expected a format error, got {other:?}"),
    }
}

#[cfg(feature = "cli")] // the binary is built with the `cli` feature
#[test]
fn cli_inverts_a_numpy_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("inverse.npy");
    let (reference, _) = numpy_tridiagonal_inverse();
    for (precision, tol) in [("f64", 1e-12), ("f32", 1e-5)] {
        let (ok, stdout, stderr) = blocktri(&[
            "invert",
            data("tridiag_f32_f.npz").to_str().unwrap(),
            "--method",
            "sequential",
            "--precision",
            precision,
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(ok, "{stdout}\n{stderr}");
        let (x, shape) = io::read_npy(&out).unwrap();
        assert_eq!(shape, [3, 7, 7]);
        let worst = x.iter().zip(&reference).map(|(a, b)| (a - b).abs() / b.abs().max(1.0)).fold(0.0, f64::max);
        assert!(worst < tol, "{precision}: {worst:e}");
    }
}
