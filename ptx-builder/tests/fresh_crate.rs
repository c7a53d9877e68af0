//! A crate outside this workspace, made from scratch in a temporary directory, depends on
//! `blocktri-ptx` (build dependency) and `blocktri-prims` (kernel dependency) by path,
//! builds its kernel and embeds PTX with a `.entry`: what a user's project does.
//! Needs the nightly toolchain of `rust-toolchain.toml` (with rust-src, llvm-tools), no GPU.

use std::path::Path;
use std::process::Command;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

#[test]
fn a_fresh_crate_builds_its_kernel_to_ptx() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("repository root");
    let tmp = tempfile::tempdir().expect("temporary directory");
    let root = tmp.path();
    let path_of = |p: &str| repo.join(p).display().to_string().replace('\\', "/");

    // The same toolchain as this repository (nightly with rust-src and llvm-tools).
    std::fs::copy(repo.join("rust-toolchain.toml"), root.join("rust-toolchain.toml")).expect("toolchain file");

    // The kernel crate: no_std, one kernel using the primitives.
    write(
        &root.join("kernels/Cargo.toml"),
        &format!(
            r#"[package]
name = "fresh-kernels"
version = "0.1.0"
edition = "2024"

[lib]
crate-type = ["cdylib", "rlib"]

[dependencies]
blocktri-prims = {{ path = "{}" }}
"#,
            path_of("prims")
        ),
    );
    write(
        &root.join("kernels/src/lib.rs"),
        r#"#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]
#[cfg(not(target_arch = "nvptx64"))]
extern crate std;

use blocktri_prims::{Real, global_idx_x};

/// `total += sum of x`, one atomic per thread.
pub unsafe fn accumulate<T: Real>(x: *const T, total: *mut T, n: u32) {
    let i = global_idx_x();
    if i < n {
        unsafe { T::atomic_add_global(total, *x.add(i as usize)) };
    }
}

#[cfg(target_arch = "nvptx64")]
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn fresh_accumulate(x: *const f32, total: *mut f32, n: u32) {
    unsafe { accumulate(x, total, n) }
}
"#,
    );

    // The host crate: a build script with the builder, a main that prints what it embedded
    // (the embedded PTX is compressed; the builder crate gives the text back).
    write(
        &root.join("app/Cargo.toml"),
        &format!(
            r#"[package]
name = "fresh-app"
version = "0.1.0"
edition = "2024"

[workspace]

[dependencies]
blocktri-ptx = {{ path = "{0}" }}

[build-dependencies]
blocktri-ptx = {{ path = "{0}" }}
"#,
            path_of("ptx-builder")
        ),
    );
    write(
        &root.join("app/build.rs"),
        r#"fn main() {
    let out = blocktri_ptx::PtxBuilder::new("../kernels").arch("sm_80").build().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out.kernels, ["fresh_accumulate"]);
}
"#,
    );
    write(
        &root.join("app/src/main.rs"),
        r#"include!(concat!(env!("OUT_DIR"), "/fresh_kernels_ptx.rs"));
fn main() {
    let (arch, packed) = PTX[0];
    let ptx = blocktri_ptx::decompress(packed).expect("the embedded PTX decompresses");
    let entry = ptx.lines().find(|l| l.contains(".entry")).unwrap_or("none");
    println!("{arch} {KERNELS:?} {}", entry.trim());
}
"#,
    );

    // Build and run it with the same cargo, in its own target directory. The toolchain is
    // pinned for every rustc call (rustup would pick the default toolchain for registry
    // crates, whose directories have no rust-toolchain.toml); the outer cargo's
    // per-package variables must not leak into the nested build.
    let toolchain = std::fs::read_to_string(repo.join("rust-toolchain.toml")).expect("toolchain file");
    let channel = toolchain
        .lines()
        .find_map(|l| l.trim().strip_prefix("channel").map(|v| v.trim_start_matches([' ', '=']).trim().trim_matches('"').to_string()))
        .expect("channel in rust-toolchain.toml");
    let mut cmd = Command::new(env!("CARGO"));
    cmd.current_dir(root.join("app"))
        .args(["run", "--quiet"])
        .env("CARGO_TARGET_DIR", root.join("target"))
        .env("RUSTUP_TOOLCHAIN", &channel);
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy().into_owned();
        if key.starts_with("CARGO_PKG_") || key.starts_with("CARGO_MANIFEST") || key == "OUT_DIR" {
            cmd.env_remove(&key);
        }
    }
    let out = cmd.output().expect("running cargo");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "the fresh crate failed to build:\n{}\n{}", stdout, String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("sm_80"), "{stdout}");
    assert!(stdout.contains(r#"["fresh_accumulate"]"#), "{stdout}");
    assert!(stdout.contains(".entry fresh_accumulate"), "{stdout}");
}
