//! The Landlock ruleset of the `sandbox-exec` helper: what the confined command may read,
//! write and connect to.
//!
//! Owns the rules: read and execute everywhere except the hidden directories, everything
//! beneath the workspace, read and write on a few harmless devices (`/dev/null` and
//! friends); with the network off, no TCP bind or connect (ABI 4); no signals to, and no
//! abstract UNIX sockets of, processes outside the sandbox (ABI 6). Rules the kernel does
//! not know are dropped (best effort); a kernel without Landlock at all is an error.
//! Landlock also refuses `ptrace` and `/proc/<pid>/environ` of any process outside the
//! sandbox, the server included.

use std::path::{Path, PathBuf};

use ::landlock::{
    ABI, Access, AccessFs, AccessNet, LandlockStatus, Ruleset, RulesetAttr, RulesetCreatedAttr,
    RulesetStatus, Scope, path_beneath_rules,
};

/// The newest Landlock ABI these rules are written for: 6 (Linux 6.12), which adds scopes
/// to ABI 4's TCP rules and ABI 5's device ioctls. Newer kernels enforce it fully.
const ABI_TARGET: ABI = ABI::V6;

/// Devices any command may read and write (open with `O_RDWR`, `ioctl`).
const DEVICES: [&str; 6] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
];

/// Restricts this process (and everything it executes) to the rules above. `hide`
/// lists directories not to be read; `network` allows TCP.
pub(crate) fn restrict(workspace: &Path, hide: &[PathBuf], network: bool) -> Result<(), String> {
    let abi = ABI_TARGET;
    let mut ruleset = Ruleset::default()
        .handle_access(AccessFs::from_all(abi))
        .map_err(landlock_error)?;
    if !network {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(abi))
            .map_err(landlock_error)?;
    }
    let hide: Vec<PathBuf> = hide
        .iter()
        .filter_map(|dir| std::fs::canonicalize(dir).ok())
        .filter(|dir| dir.parent().is_some())
        .collect();
    let mut readable = Vec::new();
    readable_roots(Path::new("/"), &hide, &mut readable);
    let devices = DEVICES.iter().map(Path::new).filter(|dev| dev.exists());
    let status = ruleset
        .scope(Scope::from_all(abi))
        .map_err(landlock_error)?
        .create()
        .map_err(landlock_error)?
        .add_rules(path_beneath_rules(&readable, AccessFs::from_read(abi)))
        .map_err(landlock_error)?
        .add_rules(path_beneath_rules(devices, AccessFs::from_all(abi)))
        .map_err(landlock_error)?
        .add_rules(path_beneath_rules([workspace], AccessFs::from_all(abi)))
        .map_err(landlock_error)?
        .restrict_self()
        .map_err(landlock_error)?;
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err(unsupported(status.landlock));
    }
    Ok(())
}

/// The largest paths under `dir` (itself included) that contain no hidden directory, for
/// the read rules. Ancestors of a hidden directory are not in it (Landlock grants a
/// directory with everything beneath), so listing them fails; their other entries are,
/// one by one. Symbolic links are skipped: what they point to is covered (or hidden) where
/// it is.
fn readable_roots(dir: &Path, hide: &[PathBuf], out: &mut Vec<PathBuf>) {
    if hide.iter().any(|hidden| hidden == dir) {
        return;
    }
    if !hide.iter().any(|hidden| hidden.starts_with(dir)) {
        out.push(dir.to_path_buf());
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if entry.file_type().is_ok_and(|kind| !kind.is_symlink()) {
            readable_roots(&entry.path(), hide, out);
        }
    }
}

/// Why Landlock cannot be enforced here, for the operator.
fn unsupported(status: LandlockStatus) -> String {
    match status {
        LandlockStatus::NotEnabled => "Landlock is built into this kernel but not enabled \
             (add `landlock` to the `lsm=` boot parameter)"
            .to_owned(),
        LandlockStatus::NotImplemented => "this kernel has no Landlock (it needs Linux 5.13 or \
             later built with CONFIG_SECURITY_LANDLOCK)"
            .to_owned(),
        LandlockStatus::Available { effective_abi, .. } => {
            format!("Landlock (ABI {effective_abi:?}) did not enforce the ruleset")
        }
    }
}

/// A Landlock error as the helper reports it.
fn landlock_error(error: impl std::fmt::Display) -> String {
    format!("Landlock: {error}")
}
