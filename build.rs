//! Compiles the kernel crate `device/` to PTX and embeds it (see `ptx-builder/`).
//! Architectures: `sm_80` by default (runs on Ampere, Ada and Hopper through the driver's
//! PTX JIT); set `BLOCKTRI_PTX_ARCHS=sm_80,sm_90` to add a Hopper build.
fn main() {
    match blocktri_ptx::PtxBuilder::new("device").arch("sm_80").build() {
        Ok(out) => {
            let archs: Vec<_> = out.modules.iter().map(|m| m.arch.as_str()).collect();
            println!("cargo:rustc-env=BLOCKTRI_PTX_SUMMARY={} kernels for {}", out.kernels.len(), archs.join(","));
        }
        Err(e) => {
            eprintln!("\nerror: could not build the GPU kernels (device/) to PTX:\n{e}\n");
            std::process::exit(1);
        }
    }
}
