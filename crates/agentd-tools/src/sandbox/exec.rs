//! The Landlock sandbox, child side: `agentd sandbox-exec`, which confines its own process
//! and then executes the tool's command in place.
//!
//! Owns the helper's arguments and the order of the steps: create the private temp
//! directory, set `PR_SET_NO_NEW_PRIVS`, drop every capability (`sandbox::caps`), restrict the filesystem (and TCP) with Landlock
//! (`sandbox::ruleset`), install the seccomp filter (`sandbox::seccomp`), then `execvp`.
//! Both restrictions are inherited across `exec` and `fork` and cannot be lifted, so
//! everything the command starts is confined too. It runs only in a freshly started
//! helper process, never in the server: Landlock and seccomp are irreversible for the
//! process that applies them. It does not touch the environment it was given (the server
//! already cleared it), except for adding `TMPDIR`.

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;

use super::reexec::SANDBOX_EXEC;
use super::{caps, ruleset, seccomp};

/// The private temporary directory, relative to the workspace (beside the tools' output
/// logs in `.agentd/output`); it becomes the command's `TMPDIR`.
pub const PRIVATE_TMP: &str = ".agentd/tmp";

/// The exit status when the sandbox could not be set up and the command did not run (as
/// a shell's "found but cannot execute").
const SETUP_FAILED: i32 = 126;

/// What `sandbox-exec` was asked to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ExecArgs {
    /// The only directory the command may write (besides a few devices).
    pub(crate) workspace: PathBuf,
    /// Whether IP sockets and TCP are allowed.
    pub(crate) network: bool,
    /// Directories the command must not read.
    pub(crate) hide: Vec<PathBuf>,
    /// The command and its arguments.
    pub(crate) command: Vec<OsString>,
}

/// The entry point of the `sandbox-exec` helper: `args` are its whole command line,
/// program name first, then optionally `sandbox-exec`, then `--workspace <dir>
/// [--network] [--hide <dir>]… -- <program> <args>…`; or, instead of all that, `--launch
/// <setup>…`: a launcher parked ahead of a tool call, which reads its command from standard
/// input and executes it unconfined (the command is already wrapped by the sandbox; see
/// `crate::launch`). Confines this process with Landlock
/// and seccomp and executes the program in it; never returns. If the sandbox cannot be
/// applied (say, the kernel has no Landlock), it says why on stderr and exits with status
/// 126 without running anything.
pub fn sandbox_exec_main(args: impl IntoIterator<Item = OsString>) -> ! {
    let args: Vec<OsString> = args.into_iter().skip(1).collect();
    let rest = match args.first().map(OsString::as_os_str) {
        Some(first) if first == OsStr::new(SANDBOX_EXEC) => &args[1..],
        _ => &args[..],
    };
    if rest.first().map(OsString::as_os_str) == Some(OsStr::new(crate::launch::LAUNCH)) {
        crate::launch::launch_main(&rest[1..]);
    }
    let error = match parse(args).and_then(|args| confine_and_exec(&args)) {
        Ok(never) => match never {},
        Err(error) => error,
    };
    // Nothing else may be written: this is the tool's output.
    let _ = writeln!(std::io::stderr(), "agentd sandbox-exec: {error}");
    std::process::exit(SETUP_FAILED)
}

/// Parses the arguments after the program name.
pub(crate) fn parse(args: impl IntoIterator<Item = OsString>) -> Result<ExecArgs, String> {
    let mut args = args.into_iter().peekable();
    if args.peek().map(OsString::as_os_str) == Some(OsStr::new(SANDBOX_EXEC)) {
        args.next();
    }
    let mut workspace = None;
    let mut network = false;
    let mut hide = Vec::new();
    loop {
        let arg = args.next().ok_or("missing `-- <command>`")?;
        match arg.to_str() {
            Some("--") => break,
            Some("--network") => network = true,
            Some("--workspace") => workspace = Some(path_value(args.next(), "--workspace")?),
            Some("--hide") => hide.push(path_value(args.next(), "--hide")?),
            _ => return Err(format!("unexpected argument {arg:?}")),
        }
    }
    let command: Vec<OsString> = args.collect();
    if command.is_empty() {
        return Err("missing the command after `--`".to_owned());
    }
    Ok(ExecArgs {
        workspace: workspace.ok_or("missing `--workspace <dir>`")?,
        network,
        hide,
        command,
    })
}

/// The absolute path given to `flag`.
fn path_value(value: Option<OsString>, flag: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(value.ok_or_else(|| format!("{flag} needs a directory"))?);
    if path.is_absolute() {
        Ok(path)
    } else {
        Err(format!(
            "{flag} needs an absolute path, not {}",
            path.display()
        ))
    }
}

/// Applies the sandbox to this process and executes the command; returns only on failure.
fn confine_and_exec(args: &ExecArgs) -> Result<std::convert::Infallible, String> {
    let tmp = args.workspace.join(PRIVATE_TMP);
    std::fs::create_dir_all(&tmp).map_err(|err| format!("creating {}: {err}", tmp.display()))?;
    // Also set by the steps below; first, so that nothing runs without it.
    nix::sys::prctl::set_no_new_privs()
        .map_err(|err| format!("setting PR_SET_NO_NEW_PRIVS: {err}"))?;
    caps::drop_all()?;
    ruleset::restrict(&args.workspace, &args.hide, args.network)?;
    seccomp::install(args.network)?;
    let (program, rest) = args
        .command
        .split_first()
        .ok_or("missing the command after `--`")?;
    let error = std::process::Command::new(program)
        .args(rest)
        .env("TMPDIR", &tmp)
        .exec();
    Err(format!("executing {}: {error}", program.to_string_lossy()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<OsString> {
        list.iter().map(OsString::from).collect()
    }

    #[test]
    fn arguments_parse_with_or_without_the_subcommand_name() {
        let expected = ExecArgs {
            workspace: PathBuf::from("/w"),
            network: true,
            hide: vec![PathBuf::from("/run"), PathBuf::from("/data")],
            command: args(&["bash", "-c", "echo --network"]),
        };
        let line = [
            "--workspace",
            "/w",
            "--network",
            "--hide",
            "/run",
            "--hide",
            "/data",
            "--",
            "bash",
            "-c",
            "echo --network",
        ];
        assert_eq!(parse(args(&line)).unwrap(), expected);
        let with_name: Vec<&str> = std::iter::once("sandbox-exec").chain(line).collect();
        assert_eq!(parse(args(&with_name)).unwrap(), expected);
    }

    #[test]
    fn bad_arguments_are_refused_with_the_reason() {
        let cases: [(&[&str], &str); 5] = [
            (&["--workspace", "/w"], "missing `-- <command>`"),
            (
                &["--workspace", "/w", "--"],
                "missing the command after `--`",
            ),
            (&["--", "true"], "missing `--workspace <dir>`"),
            (
                &["--workspace", "w", "--", "true"],
                "--workspace needs an absolute path, not w",
            ),
            (
                &["--bogus", "--", "true"],
                "unexpected argument \"--bogus\"",
            ),
        ];
        for (line, error) in cases {
            assert_eq!(parse(args(line)), Err(error.to_owned()), "{line:?}");
        }
    }
}
