//! Builds `kernels/` to PTX; `src/main.rs` embeds it with `include!`.
fn main() {
    let out = blocktri_ptx::PtxBuilder::new("kernels").arch("sm_80").build().unwrap_or_else(|e| {
        eprintln!("error: building the example's kernels to PTX failed:\n{e}");
        std::process::exit(1)
    });
    println!("cargo:rustc-env=CUSTOM_KERNEL_EXPORTS={}", out.kernels.join(","));
}
