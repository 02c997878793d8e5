//! `agentd-sandbox-exec`: the Landlock + seccomp helper on its own, the same code as the
//! hidden `agentd sandbox-exec` subcommand. It exists so this crate's tests can run the
//! real helper without the `agentd` binary (which depends on this crate); the server itself
//! re-executes `agentd`.

fn main() {
    agentd_tools::sandbox_exec_main(std::env::args_os())
}
