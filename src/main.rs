//! The `lockwatch` command: see `lockwatch --help`.

fn main() -> std::process::ExitCode {
    // Started by a worker as its job's reaper, this never returns.
    lockwatch::reaper::enter_if_asked();
    lockwatch::cli::main()
}
