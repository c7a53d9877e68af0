//! Writes the PTX module of each named kernel, as the host loads it (the kernel and what it
//! uses, no other entry), so that `ptxas -v` can report its registers and spills without a
//! GPU: `scripts/ptxas-registers.sh` drives it.
//!
//! ```text
//! cargo run -q -p blocktri-ptx --example kernel_ptx -- MODULE.ptx OUT_DIR KERNEL...
//! ```
//! A kernel name may end in `*` to take every entry starting with it.

use blocktri_ptx::split::PtxIndex;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [module, out_dir, patterns @ ..] = args.as_slice() else {
        eprintln!("usage: kernel_ptx MODULE.ptx OUT_DIR KERNEL...");
        return ExitCode::from(2);
    };
    let text = match std::fs::read_to_string(module) {
        Ok(text) => text,
        Err(e) => {
            eprintln!("cannot read {module}: {e}");
            return ExitCode::from(1);
        }
    };
    let Some(index) = PtxIndex::parse(&text) else {
        eprintln!("{module} is not a PTX module this splitter understands");
        return ExitCode::from(1);
    };
    let mut written = 0;
    for pattern in patterns {
        let names: Vec<&str> = match pattern.strip_suffix('*') {
            Some(prefix) => index.entries().filter(|name| name.starts_with(prefix)).collect(),
            None => vec![pattern.as_str()],
        };
        for name in names {
            let Some(kernel) = index.kernel_module(name) else {
                eprintln!("no kernel {name} in {module}");
                return ExitCode::from(1);
            };
            let path = std::path::Path::new(out_dir).join(format!("{name}.ptx"));
            if let Err(e) = std::fs::write(&path, kernel) {
                eprintln!("cannot write {}: {e}", path.display());
                return ExitCode::from(1);
            }
            println!("{}", path.display());
            written += 1;
        }
    }
    if written == 0 {
        eprintln!("no kernel matched");
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}
