//! The seccomp filter of the `sandbox-exec` helper: system calls a coding agent's shell
//! never needs, refused with `EPERM` (never a kill, so a tool sees an ordinary error).
//!
//! Owns the list: debugging other processes (`ptrace`, `process_vm_*`), mounts and
//! namespaces (`mount`, `unshare`, `setns`, `clone` with a `CLONE_NEW*` flag), kernel
//! keyrings, BPF, perf events, io_uring (whose requests bypass seccomp), kernel modules,
//! `reboot`, `kexec`, swap, `acct`, `chroot`, `pivot_root`, `userfaultfd`, file handles
//! (`open_by_handle_at` walks around Landlock's path checks), terminal input injection
//! (`ioctl(TIOCSTI)`), and, with the network off, creating IPv4/IPv6 sockets (a second
//! layer under Landlock's TCP rules, covering UDP and kernels older than Landlock ABI 4).
//! `fork`, `exec`, `setsid`, threads and UNIX sockets keep working. `clone3` gets `ENOSYS`
//! (its flags cannot be inspected; the C library then falls back to `clone`).

use std::collections::BTreeMap;

use nix::libc;
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

/// System calls refused whatever their arguments.
const DENIED: &[libc::c_long] = &[
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_chroot,
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_fsopen,
    libc::SYS_fsconfig,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_move_mount,
    libc::SYS_open_tree,
    libc::SYS_mount_setattr,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_reboot,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_acct,
    libc::SYS_userfaultfd,
    libc::SYS_open_by_handle_at,
    libc::SYS_name_to_handle_at,
];

/// The `clone` flags that create namespaces.
const NAMESPACE_FLAGS: [libc::c_int; 7] = [
    libc::CLONE_NEWNS,
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWNET,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWCGROUP,
];

/// Installs the filter on this thread (the helper's only one), inherited by everything it
/// executes. `network` allows IP sockets.
pub(crate) fn install(network: bool) -> Result<(), String> {
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(seccomp_error)?;
    let mut denied: BTreeMap<i64, Vec<SeccompRule>> =
        DENIED.iter().map(|&nr| (nr, Vec::new())).collect();
    let namespaces = NAMESPACE_FLAGS
        .iter()
        .map(|&flag| {
            rule(
                0,
                SeccompCmpArgLen::Qword,
                SeccompCmpOp::MaskedEq(flag as u64),
                flag as u64,
            )
        })
        .collect::<Result<_, _>>()?;
    denied.insert(libc::SYS_clone, namespaces);
    // The request's C type differs between architectures and C libraries.
    #[allow(clippy::unnecessary_cast)]
    let tiocsti = libc::TIOCSTI as u64;
    denied.insert(
        libc::SYS_ioctl,
        vec![rule(1, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, tiocsti)?],
    );
    if !network {
        let families = [libc::AF_INET, libc::AF_INET6]
            .iter()
            .map(|&family| rule(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, family as u64))
            .collect::<Result<_, _>>()?;
        denied.insert(libc::SYS_socket, families);
    }
    let eperm = SeccompAction::Errno(libc::EPERM as u32);
    let enosys = SeccompAction::Errno(libc::ENOSYS as u32);
    let clone3 = BTreeMap::from([(libc::SYS_clone3, Vec::new())]);
    for (rules, action) in [(denied, eperm), (clone3, enosys)] {
        let filter =
            SeccompFilter::new(rules, SeccompAction::Allow, action, arch).map_err(seccomp_error)?;
        let program = BpfProgram::try_from(filter).map_err(seccomp_error)?;
        seccompiler::apply_filter(&program).map_err(seccomp_error)?;
    }
    Ok(())
}

/// A rule matching when argument `index` compares to `value` by `op`.
fn rule(
    index: u8,
    len: SeccompCmpArgLen,
    op: SeccompCmpOp,
    value: u64,
) -> Result<SeccompRule, String> {
    let condition = SeccompCondition::new(index, len, op, value).map_err(seccomp_error)?;
    SeccompRule::new(vec![condition]).map_err(seccomp_error)
}

/// A seccomp error as the helper reports it.
fn seccomp_error(error: impl std::fmt::Display) -> String {
    format!("seccomp: {error}")
}
