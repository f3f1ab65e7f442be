fn main() -> std::process::ExitCode {
    netceil::main()
}
