//! The `limitbench` command line: parse, dispatch to the command registry
//! (`cli`), and turn an error into a redacted message and exit 2. Errors
//! from the library arrive here as `anyhow` errors.

use clap::Parser;

mod cli;

#[tokio::main]
async fn main() {
    limitbench_core::fleet::reaper::install_handlers();
    // CPU parameters are positions in the CPUs allowed now, before anything
    // pins (a failure here comes back where a CPU parameter is resolved).
    let _ = limitbench_core::pin::record_startup_cpus();
    let args = cli::Cli::parse();
    let code = match cli::dispatch(args).await {
        Ok(code) => code,
        Err(e) => {
            // Error messages pass through the one redaction too.
            let text = limitbench_core::redact::text(&format!("{e:#}"));
            eprintln!("limitbench: error: {text}");
            2
        }
    };
    std::process::exit(code);
}
