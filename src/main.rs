//! The `lockwatch` command: see `lockwatch --help`.

fn main() -> std::process::ExitCode {
    lockwatch::cli::main()
}
