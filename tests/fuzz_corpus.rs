//! The fuzz targets' checks (`fuzz/fuzz_targets/checks.rs`) on the checked-in seed corpus
//! (`fuzz/corpus/<target>/`) and on every input a fuzzing run ever found a crash with
//! (`fuzz/regressions/<target>/`), in the normal test run: a fixed finding stays fixed
//! without libFuzzer. The fuzzing itself is `cargo fuzz run <target>` (see `.ci/run`).

#[path = "../fuzz/fuzz_targets/checks.rs"]
mod checks;

use std::path::Path;

/// Runs `check` on every file under `fuzz/{corpus,regressions}/<target>/`; returns how many.
fn replay(target: &str, check: fn(&[u8])) -> usize {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let mut count = 0;
    for kind in ["corpus", "regressions"] {
        let Ok(entries) = std::fs::read_dir(root.join(kind).join(target)) else { continue };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_file() && path.file_name().is_some_and(|n| n != ".gitkeep") {
                let data = std::fs::read(&path).unwrap();
                let result = std::panic::catch_unwind(|| check(&data));
                assert!(result.is_ok(), "{target}: {} fails its check", path.display());
                count += 1;
            }
        }
    }
    count
}

#[test]
fn fuzz_seeds_and_past_findings_pass_their_checks() {
    for (target, check) in [("npz", checks::npz as fn(&[u8])), ("npy", checks::npy), ("mtx", checks::mtx), ("blocks", checks::blocks)] {
        let count = replay(target, check);
        assert!(count >= 3, "{target}: only {count} inputs; the seed corpus is missing");
    }
}
