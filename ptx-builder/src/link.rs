//! The linker step: rustc calls the build script back with llvm-bitcode-linker style
//! arguments (`-o OUT`, `--export-symbol NAME`, `--target-cpu CPU`, input objects).
//! With fat LTO the crate's object is one LLVM bitcode module that already contains the
//! `core` code it needs, so the link is: llvm-link, opt (internalize all but the kernels,
//! drop dead code, optimize), llc (emit PTX).

use std::path::PathBuf;
use std::process::Command;

/// If this process is the PTX linker (rustc started it with [`crate::LINKER_ENV`] set),
/// performs the link and exits; otherwise returns.
pub fn run_if_linker() {
    if std::env::var_os(crate::LINKER_ENV).is_none() {
        return;
    }
    match link(std::env::args().skip(1).collect()) {
        Ok(()) => std::process::exit(0),
        Err(e) => {
            eprintln!("blocktri-ptx linker: {e}");
            std::process::exit(1)
        }
    }
}

struct LinkArgs {
    output: PathBuf,
    inputs: Vec<PathBuf>,
    exports: Vec<String>,
    cpu: String,
}

fn parse(args: Vec<String>) -> Result<LinkArgs, String> {
    let mut output = None;
    let mut inputs = Vec::new();
    let mut exports = Vec::new();
    let mut cpu = "sm_80".to_string();
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "-o" => output = it.next().map(PathBuf::from),
            "--export-symbol" => exports.extend(it.next()),
            "--target-cpu" => cpu = it.next().unwrap_or(cpu),
            "-L" | "--target" | "--linker-plugin-lto" => {
                it.next();
            }
            _ if a.starts_with('-') => {}
            _ if a.ends_with(".o") => inputs.push(PathBuf::from(a)),
            _ => {}
        }
    }
    Ok(LinkArgs { output: output.ok_or("no -o argument")?, inputs, exports, cpu })
}

fn tool(name: &str) -> PathBuf {
    let dir = std::env::var_os(crate::TOOLS_ENV).map(PathBuf::from).unwrap_or_default();
    dir.join(name)
}

fn run(cmd: &mut Command) -> Result<(), String> {
    let out = cmd.output().map_err(|e| format!("{:?}: {e}", cmd.get_program()))?;
    if out.status.success() { Ok(()) } else { Err(format!("{:?} failed: {}", cmd.get_program(), String::from_utf8_lossy(&out.stderr))) }
}

fn link(args: Vec<String>) -> Result<(), String> {
    let a = parse(args)?;
    if a.inputs.is_empty() {
        return Err("no bitcode inputs (.o) were passed".into());
    }
    let opt_level = std::env::var(crate::OPT_ENV).unwrap_or_else(|_| "3".into());
    let work = a.output.with_extension("link");
    std::fs::create_dir_all(&work).map_err(|e| e.to_string())?;
    let linked = work.join("linked.bc");
    let optimized = work.join("opt.bc");
    run(Command::new(tool("llvm-link")).args(&a.inputs).arg("-o").arg(&linked))?;
    let passes = format!("internalize,globaldce,default<O{opt_level}>");
    let extra: Vec<String> = std::env::var(crate::LLVM_ARGS_ENV).unwrap_or_default().split_whitespace().map(String::from).collect();
    run(Command::new(tool("opt"))
        .args(&extra)
        .arg(format!("--internalize-public-api-list={}", a.exports.join(",")))
        .arg(format!("-passes={passes}"))
        .arg(&linked)
        .arg("-o")
        .arg(&optimized))?;
    run(Command::new(tool("llc"))
        .args(&extra)
        .arg(format!("-O{opt_level}"))
        .arg(format!("-mcpu={}", a.cpu))
        .arg(&optimized)
        .arg("-o")
        .arg(&a.output))?;
    Ok(())
}
