//! Compile a `#![no_std]` Rust kernel crate to PTX from a build script.
//!
//! ```no_run
//! // build.rs of a crate that ships GPU kernels written in Rust
//! fn main() {
//!     let ptx = blocktri_ptx::PtxBuilder::new("kernels") // path of the kernel crate
//!         .arch("sm_80")
//!         .build()
//!         .unwrap_or_else(|e| panic!("{e}"));
//!     // `include!(concat!(env!("OUT_DIR"), "/kernels_ptx.rs"))` now defines
//!     // `PTX: &[(&str, &[u8])]` (arch, the PTX as one zstd frame) and `KERNELS: &[&str]`.
//!     println!("cargo:warning=kernels: {:?}", ptx.kernels);
//! }
//! ```
//!
//! # How it works
//! 1. `cargo rustc --release --target nvptx64-nvidia-cuda -Zbuild-std=core --crate-type cdylib`
//!    on the kernel crate, in a target directory per arch under `OUT_DIR`, with
//!    `-C target-cpu=<arch>` for every crate of the build (so `cfg!(target_feature =
//!    "sm_90")` holds in the kernel's dependencies too) and `-C linker=<this build script>`.
//! 2. rustc calls the build script back as its linker (the environment variable
//!    [`LINKER_ENV`] tells it so; [`PtxBuilder::build`] handles that call first thing and
//!    exits). The linker step runs `llvm-link` on the crate's LTO bitcode, `opt` to
//!    internalize everything but the exported kernels and optimize, and `llc` to emit PTX.
//! 3. The PTX is copied to `OUT_DIR/<crate>.<arch>.ptx`, compressed into
//!    `OUT_DIR/<crate>.<arch>.ptx.zst` (one zstd frame: PTX is repetitive text, ~9x
//!    smaller; a program carrying two architectures of a large kernel crate shrinks by
//!    tens of megabytes), and a Rust file `OUT_DIR/<crate>_ptx.rs` embeds the
//!    compressed form. [`decompress`] (or blocktri's `Module::from_embedded`) gives the
//!    text back.
//!
//! The kernel crate must not be a member of the calling workspace (list it under the
//! workspace's `exclude`, or give it its own `[workspace]` table) and needs
//! `crate-type = ["cdylib", "rlib"]`; the builder sets its release profile (`panic = "abort"`,
//! fat LTO, one codegen unit) on the command line.
//!
//! Requirements: a nightly toolchain with the `rust-src` and `llvm-tools` components.
//! When one is missing, [`PtxBuilder::build`] fails with [`BuildError::MissingComponent`],
//! whose message is the command that installs it.

#![allow(clippy::needless_doctest_main)] // the example is a build script's main

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

mod link;
pub mod split;

/// Environment variable that switches a build script into linker mode.
pub const LINKER_ENV: &str = "BLOCKTRI_PTX_LINKER";
const TOOLS_ENV: &str = "BLOCKTRI_PTX_TOOLS";
const OPT_ENV: &str = "BLOCKTRI_PTX_OPT";
const LLVM_ARGS_ENV: &str = "BLOCKTRI_PTX_LLVM_ARGS";

/// What can go wrong while building PTX.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// A toolchain component is missing; the message says how to install it.
    #[error("{what} is missing; install it with `{command}`")]
    MissingComponent {
        /// The component (or toolchain) that is missing.
        what: String,
        /// The command that installs it.
        command: String,
    },
    /// The nested `cargo rustc` for nvptx64 failed.
    #[error("building the kernel crate {krate} for {arch} failed (exit status {status}):\n{stderr}")]
    Cargo {
        /// Kernel crate path.
        krate: String,
        /// Target architecture.
        arch: String,
        /// Exit status of cargo.
        status: String,
        /// Its standard error.
        stderr: String,
    },
    /// The bitcode link step failed.
    #[error("PTX link step failed: {0}")]
    Link(String),
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The error.
        source: std::io::Error,
    },
    /// The PTX has no `.entry` (no `extern "ptx-kernel"` function was exported).
    #[error("the PTX of {0} exports no kernel (.entry); mark kernels `#[unsafe(no_mangle)] pub unsafe extern \"ptx-kernel\" fn`")]
    NoKernels(String),
}

/// One built PTX module.
#[derive(Debug, Clone)]
pub struct PtxModule {
    /// Target architecture, e.g. `sm_80`.
    pub arch: String,
    /// Where the PTX was written (in `OUT_DIR`).
    pub path: PathBuf,
    /// Where its compressed form was written (what the generated Rust file embeds).
    pub compressed: PathBuf,
}

/// zstd level of the embedded PTX: ~9x smaller than the text and ~0.4 s per 22 MB module
/// at build time (level 19 gains another 15 % for ~14 s); decompression takes about the
/// same time whatever the level (~60 ms for 22 MB on the H200 machine's CPU, with the
/// UTF-8 check, `docs/perf-notes.md` entry 103).
const ZSTD_LEVEL: i32 = 9;

/// Compresses PTX text the way the generated Rust file embeds it: one zstd frame that
/// records its content size.
///
/// ```
/// let text = ".version 8.0\n.target sm_80\n";
/// let packed = blocktri_ptx::compress(text).unwrap();
/// assert_eq!(blocktri_ptx::decompress(&packed).unwrap(), text);
/// ```
pub fn compress(ptx: &str) -> std::io::Result<Vec<u8>> {
    zstd::bulk::compress(ptx.as_bytes(), ZSTD_LEVEL)
}

/// The PTX text of an embedded module (the second element of a `PTX` entry of the
/// generated file): the inverse of [`compress`]. Fails on bytes that are not one zstd
/// frame of UTF-8 text.
///
/// ```
/// let packed = blocktri_ptx::compress(".visible .entry k()\n{\n}\n").unwrap();
/// assert!(blocktri_ptx::decompress(&packed).unwrap().contains(".entry k"));
/// assert!(blocktri_ptx::decompress(b"not zstd").is_err());
/// ```
pub fn decompress(packed: &[u8]) -> std::io::Result<String> {
    let bytes = zstd::stream::decode_all(packed)?;
    String::from_utf8(bytes).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

/// The result of [`PtxBuilder::build`].
#[derive(Debug, Clone)]
pub struct PtxOutput {
    /// One module per requested architecture, in the order asked for.
    pub modules: Vec<PtxModule>,
    /// Names of the exported kernels (`.visible .entry`).
    pub kernels: Vec<String>,
    /// The generated Rust file that embeds the PTX (`include!` it).
    pub rust_file: PathBuf,
}

/// Builds a kernel crate to PTX. See the [crate docs](crate).
#[derive(Debug, Clone)]
pub struct PtxBuilder {
    crate_dir: PathBuf,
    archs: Vec<String>,
    opt_level: u8,
    features: Vec<String>,
    watch: Vec<PathBuf>,
    max_registers: Vec<(String, u32)>,
    llvm_args: Vec<String>,
}

impl PtxBuilder {
    /// A builder for the kernel crate at `crate_dir` (relative paths are taken from the
    /// calling package's `CARGO_MANIFEST_DIR`). Defaults: `sm_80` (runs on Ampere and
    /// newer, Hopper included), `-O3`.
    ///
    /// The environment variable `BLOCKTRI_PTX_ARCHS` (comma-separated, e.g.
    /// `sm_80,sm_90`) overrides the architectures.
    pub fn new(crate_dir: impl AsRef<Path>) -> Self {
        let dir = crate_dir.as_ref();
        let crate_dir = if dir.is_absolute() {
            dir.to_path_buf()
        } else {
            PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_else(|| ".".into())).join(dir)
        };
        PtxBuilder {
            crate_dir,
            archs: Vec::new(),
            opt_level: 3,
            features: Vec::new(),
            watch: Vec::new(),
            max_registers: Vec::new(),
            llvm_args: Vec::new(),
        }
    }

    /// Adds a target architecture (`sm_80`, `sm_90`, ...). One PTX module per arch.
    pub fn arch(mut self, arch: &str) -> Self {
        self.archs.push(arch.to_string());
        self
    }

    /// Optimization level of `opt` and `llc` (0..=3).
    pub fn opt_level(mut self, level: u8) -> Self {
        self.opt_level = level.min(3);
        self
    }

    /// Enables a cargo feature of the kernel crate.
    pub fn feature(mut self, feature: &str) -> Self {
        self.features.push(feature.to_string());
        self
    }

    /// Caps the registers per thread of every kernel whose name starts with `prefix`
    /// (PTX `.maxnreg`, what `__launch_bounds__`/`-maxrregcount` do for CUDA C++): more
    /// blocks fit on a multiprocessor, at the risk of spills (check `ptxas -v`).
    pub fn max_registers(mut self, prefix: &str, count: u32) -> Self {
        self.max_registers.push((prefix.to_string(), count));
        self
    }

    /// Extra LLVM options for code generation, given to rustc (`-C llvm-args`) and to the
    /// `opt` and `llc` of the link step, e.g. `-unroll-threshold=2000` so that loops over
    /// compile-time sizes unroll fully and register arrays stay in registers.
    pub fn llvm_arg(mut self, arg: &str) -> Self {
        self.llvm_args.push(arg.to_string());
        self
    }

    /// Also rebuild when files under `path` change (path dependencies of the kernel crate
    /// declared with `path = "..."` are found automatically).
    pub fn watch(mut self, path: impl AsRef<Path>) -> Self {
        self.watch.push(path.as_ref().to_path_buf());
        self
    }

    /// Builds the PTX. When this process was started by rustc as the PTX linker, does the
    /// link step and exits the process instead of returning.
    pub fn build(self) -> Result<PtxOutput, BuildError> {
        link::run_if_linker();
        let archs = match std::env::var("BLOCKTRI_PTX_ARCHS") {
            Ok(v) if !v.trim().is_empty() => v.split(',').map(|s| s.trim().to_string()).collect(),
            _ if self.archs.is_empty() => vec!["sm_80".to_string()],
            _ => self.archs.clone(),
        };
        println!("cargo:rerun-if-env-changed=BLOCKTRI_PTX_ARCHS");
        let toolchain = Toolchain::find()?;
        let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_else(|| "target/ptx".into()));
        let krate = crate_name(&self.crate_dir)?;
        self.emit_rerun(&krate)?;

        let mut modules = Vec::new();
        let mut kernels: Vec<String> = Vec::new();
        for arch in &archs {
            let ptx_path = out_dir.join(format!("{krate}.{arch}.ptx"));
            self.cargo_build(&toolchain, &out_dir, arch, &ptx_path)?;
            let mut text = read(&ptx_path)?;
            if !self.max_registers.is_empty() {
                text = cap_registers(&text, &self.max_registers);
                write(&ptx_path, &text)?;
            }
            let found = split::entry_names(&text);
            if found.is_empty() {
                return Err(BuildError::NoKernels(krate.clone()));
            }
            if kernels.is_empty() {
                kernels = found;
            }
            let compressed = out_dir.join(format!("{krate}.{arch}.ptx.zst"));
            let packed = compress(&text).map_err(|e| BuildError::Io { path: compressed.display().to_string(), source: e })?;
            write(&compressed, packed)?;
            modules.push(PtxModule { arch: arch.clone(), path: ptx_path, compressed });
        }
        let rust_file = out_dir.join(format!("{krate}_ptx.rs"));
        write(&rust_file, embed_source(&modules, &kernels))?;
        Ok(PtxOutput { modules, kernels, rust_file })
    }

    fn emit_rerun(&self, _krate: &str) -> Result<(), BuildError> {
        let mut watched = vec![self.crate_dir.join("src"), self.crate_dir.join("Cargo.toml")];
        let manifest = read(&self.crate_dir.join("Cargo.toml"))?;
        for dep in path_dependencies(&manifest) {
            let dir = self.crate_dir.join(dep);
            watched.push(dir.join("src"));
            watched.push(dir.join("Cargo.toml"));
        }
        watched.extend(self.watch.iter().cloned());
        for p in watched {
            println!("cargo:rerun-if-changed={}", p.display());
        }
        Ok(())
    }

    fn cargo_build(&self, tc: &Toolchain, out_dir: &Path, arch: &str, ptx_out: &Path) -> Result<(), BuildError> {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let me = std::env::current_exe().map_err(|e| BuildError::Io { path: "current_exe".into(), source: e })?;
        let mut cmd = Command::new(cargo);
        cmd.arg("rustc")
            .arg("--release")
            .arg("--manifest-path")
            .arg(self.crate_dir.join("Cargo.toml"))
            .args(["--target", "nvptx64-nvidia-cuda", "-Zbuild-std=core", "--crate-type", "cdylib"])
            // Kernels abort on panic (the panic handler traps) and need one fat-LTO
            // bitcode module for the link step.
            .args(["--config", "profile.release.panic=\"abort\"", "--config", "profile.release.lto=\"fat\""])
            .args(["--config", "profile.release.codegen-units=1", "--config", "profile.release.debug=false"])
            // Every crate of the build (dependencies and `core` too) is compiled for `arch`,
            // so `cfg!(target_feature = "sm_90")` means the same in a kernel's
            // dependencies as in the kernel crate. One target directory per arch keeps
            // the builds from invalidating each other.
            .args(["--config", &format!("target.nvptx64-nvidia-cuda.rustflags=[\"-Ctarget-cpu={arch}\"]")])
            .arg("--target-dir")
            .arg(out_dir.join("ptx-target").join(arch))
            // The artifact path is read from cargo's messages: a fresh build does not
            // relink, so the linker cannot be relied on to copy it.
            .args(["--message-format", "json-render-diagnostics"]);
        if !self.features.is_empty() {
            cmd.arg("--features").arg(self.features.join(","));
        }
        cmd.arg("--").arg(format!("-Clinker={}", me.display()));
        for var in
            ["RUSTFLAGS", "CARGO_ENCODED_RUSTFLAGS", "CARGO_BUILD_TARGET", "CARGO_TARGET_DIR", "RUSTC_WRAPPER", "RUSTC_WORKSPACE_WRAPPER"]
        {
            cmd.env_remove(var);
        }
        cmd.env(LINKER_ENV, "1")
            .env(TOOLS_ENV, &tc.tools_dir)
            .env(OPT_ENV, self.opt_level.to_string())
            .env(LLVM_ARGS_ENV, self.llvm_args.join(" "));
        let output = cmd.output().map_err(|e| BuildError::Io { path: "cargo".into(), source: e })?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        let artifact = stdout.lines().filter(|l| l.contains("\"reason\":\"compiler-artifact\"")).find_map(ptx_artifact);
        match artifact {
            Some(path) if output.status.success() => {
                std::fs::copy(&path, ptx_out).map_err(|e| BuildError::Io { path: path.display().to_string(), source: e })?;
                Ok(())
            }
            _ => Err(BuildError::Cargo {
                krate: self.crate_dir.display().to_string(),
                arch: arch.to_string(),
                status: output.status.to_string(),
                stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
            }),
        }
    }
}

/// The pieces of the Rust toolchain the PTX build needs.
struct Toolchain {
    tools_dir: PathBuf,
}

impl Toolchain {
    fn find() -> Result<Self, BuildError> {
        let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| OsString::from("rustc"));
        let pinned = std::env::var("RUSTUP_TOOLCHAIN").unwrap_or_else(|_| "nightly".into());
        let install = format!("rustup toolchain install {pinned} --profile minimal --component rust-src,llvm-tools");
        let version = run_stdout(Command::new(&rustc).arg("-vV")).unwrap_or_default();
        if !(version.contains("nightly") || version.contains("-dev")) {
            return Err(BuildError::MissingComponent {
                what: format!("a nightly Rust toolchain (found: {})", version.lines().next().unwrap_or("none")),
                command: install,
            });
        }
        let host = version.lines().find_map(|l| l.strip_prefix("host: ")).unwrap_or("x86_64-unknown-linux-gnu").to_string();
        let sysroot = PathBuf::from(run_stdout(Command::new(&rustc).arg("--print").arg("sysroot")).unwrap_or_default().trim());
        let component = |c: &str| format!("rustup component add {c} --toolchain {pinned}");
        if !sysroot.join("lib/rustlib/src/rust/library/core/Cargo.toml").exists() {
            return Err(BuildError::MissingComponent { what: "the rust-src component".into(), command: component("rust-src") });
        }
        let tools_dir = sysroot.join("lib/rustlib").join(&host).join("bin");
        for tool in ["llvm-link", "opt", "llc"] {
            if !tools_dir.join(tool).exists() {
                return Err(BuildError::MissingComponent {
                    what: format!("the llvm-tools component ({tool} not in {})", tools_dir.display()),
                    command: component("llvm-tools"),
                });
            }
        }
        Ok(Toolchain { tools_dir })
    }
}

fn run_stdout(cmd: &mut Command) -> Option<String> {
    let out = cmd.output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

fn read(path: &Path) -> Result<String, BuildError> {
    std::fs::read_to_string(path).map_err(|e| BuildError::Io { path: path.display().to_string(), source: e })
}

fn write(path: &Path, contents: impl AsRef<[u8]>) -> Result<(), BuildError> {
    std::fs::write(path, contents).map_err(|e| BuildError::Io { path: path.display().to_string(), source: e })
}

/// The `[package] name` of a crate, with `-` replaced by `_`.
fn crate_name(dir: &Path) -> Result<String, BuildError> {
    let manifest = read(&dir.join("Cargo.toml"))?;
    let mut in_package = false;
    for line in manifest.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            in_package = t == "[package]";
        } else if in_package
            && t.starts_with("name")
            && let Some(v) = t.split('=').nth(1)
        {
            return Ok(v.trim().trim_matches('"').replace('-', "_"));
        }
    }
    Err(BuildError::Link(format!("no [package] name in {}", dir.join("Cargo.toml").display())))
}

/// `path = "..."` values of a manifest (path dependencies).
fn path_dependencies(manifest: &str) -> Vec<String> {
    manifest
        .split("path")
        .skip(1)
        .filter_map(|rest| {
            let rest = rest.trim_start().strip_prefix('=')?.trim_start().strip_prefix('"')?;
            Some(rest[..rest.find('"')?].to_string())
        })
        .collect()
}

/// The `.ptx` file among the `"filenames"` of a cargo `compiler-artifact` JSON message.
fn ptx_artifact(line: &str) -> Option<PathBuf> {
    let list = &line[line.find("\"filenames\":[")? + 13..];
    let list = &list[..list.find(']')?];
    list.split(',').map(|f| f.trim().trim_matches('"').replace("\\\\", "\\")).find(|f| f.ends_with(".ptx")).map(PathBuf::from)
}

/// Inserts `.maxnreg N` after the parameter list of each `.entry` whose name starts with a
/// listed prefix (the first matching prefix wins).
pub fn cap_registers(ptx: &str, caps: &[(String, u32)]) -> String {
    let mut out = String::with_capacity(ptx.len() + 64);
    let mut pending: Option<u32> = None;
    for line in ptx.split_inclusive('\n') {
        out.push_str(line);
        let t = line.trim_start();
        if let Some(name) = split::entry_name(line) {
            pending = caps.iter().find(|(p, _)| name.starts_with(p.as_str())).map(|(_, n)| *n);
        }
        // The parameter list ends with a line starting with ')'.
        if pending.is_some() && t.starts_with(')') {
            out.push_str(&format!(".maxnreg {}\n", pending.take().unwrap_or(255)));
        }
    }
    out
}

fn embed_source(modules: &[PtxModule], kernels: &[String]) -> String {
    let mut s = String::from("// Generated by blocktri-ptx. PTX modules built from the kernel crate.\n");
    s.push_str("/// `(architecture, PTX)` for each architecture the kernels were built for; the PTX is\n");
    s.push_str("/// one zstd frame (`blocktri_ptx::decompress` gives the text).\n");
    s.push_str("pub const PTX: &[(&str, &[u8])] = &[\n");
    for m in modules {
        s.push_str(&format!("    ({:?}, include_bytes!({:?})),\n", m.arch, m.compressed.display().to_string()));
    }
    s.push_str("];\n/// Names of the exported kernels.\npub const KERNELS: &[&str] = &[\n");
    for k in kernels {
        s.push_str(&format!("    {k:?},\n"));
    }
    s.push_str("];\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_registers_of_matching_entries() {
        let ptx = ".visible .entry k1(\n\t.param .u64 a\n)\n{\n}\n.visible .entry other(\n)\n{\n}\n";
        let capped = cap_registers(ptx, &[("k1".into(), 64)]);
        assert!(capped.contains(")\n.maxnreg 64\n{"));
        assert_eq!(capped.matches(".maxnreg").count(), 1);
    }

    #[test]
    fn finds_the_ptx_artifact() {
        let msg = r#"{"reason":"compiler-artifact","package_id":"x","filenames":["/t/release/libk.rlib","/t/release/k.ptx"],"fresh":true}"#;
        assert_eq!(ptx_artifact(msg), Some(PathBuf::from("/t/release/k.ptx")));
        assert_eq!(ptx_artifact(r#"{"reason":"compiler-artifact","filenames":["/t/libk.rlib"]}"#), None);
    }

    #[test]
    fn finds_path_dependencies() {
        let m = "[dependencies]\nfoo = { path = \"../foo\" }\nbar = { version = \"1\", path=\"x/bar\" }\n";
        assert_eq!(path_dependencies(m), vec!["../foo".to_string(), "x/bar".to_string()]);
    }
}
