fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(agentloop::main())
}
