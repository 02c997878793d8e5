//! Dropping every capability before the confined command starts.
//!
//! Owns the one reason the helper needs `unsafe`: `prctl(2)` calls nix does not wrap. A
//! server running as root would otherwise hand the command its capabilities, and with
//! `CAP_SYS_PTRACE` Landlock lets it read `/proc/<pid>/environ` of processes outside the
//! sandbox (the server's secrets). Emptying the bounding set and the ambient set means
//! `execve` grants nothing, even to uid 0, and `PR_SET_NO_NEW_PRIVS` keeps file
//! capabilities and set-uid bits from adding any back.

use nix::errno::Errno;
use nix::libc;
use nix::unistd::geteuid;

/// Capability numbers are below 64 (the kernel's masks are 64 bits wide).
const CAP_LIMIT: libc::c_ulong = 64;

/// Clears the ambient capabilities and the bounding set of this process, so that what it
/// executes starts with none. Errors: running as root without `CAP_SETPCAP`, where the
/// bounding set cannot be emptied and root would keep its capabilities.
pub(crate) fn drop_all() -> Result<(), String> {
    match prctl(
        libc::PR_CAP_AMBIENT,
        libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong,
    ) {
        // EINVAL: a kernel before 4.3, without ambient capabilities.
        Ok(()) | Err(Errno::EINVAL) => {}
        Err(err) => return Err(format!("clearing the ambient capabilities: {err}")),
    }
    for cap in 0..CAP_LIMIT {
        match prctl(libc::PR_CAPBSET_DROP, cap) {
            Ok(()) => {}
            // Past the last capability this kernel knows.
            Err(Errno::EINVAL) => break,
            // Without CAP_SETPCAP; harmless unless we are root (others gain nothing at exec).
            Err(Errno::EPERM) if !geteuid().is_root() => break,
            Err(err) => return Err(format!("dropping capability {cap}: {err}")),
        }
    }
    Ok(())
}

/// `prctl(option, arg, 0, 0, 0)`.
fn prctl(option: libc::c_int, arg: libc::c_ulong) -> Result<(), Errno> {
    // SAFETY: both options used here (PR_CAP_AMBIENT, PR_CAPBSET_DROP) take integer
    // arguments only; no pointer or memory is passed to the kernel.
    #[allow(unsafe_code)]
    let result = unsafe {
        libc::prctl(
            option,
            arg,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
        )
    };
    Errno::result(result).map(drop)
}
