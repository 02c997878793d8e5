//! Where the pids controller is, as the server sees it: the hierarchies mounted here and
//! the server's own cgroup in each, from the text of `/proc/self/cgroup` and
//! `/proc/self/mountinfo`. Pure parsing, no IO; whether a place is usable is for
//! `super::cgroup` to find out.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::{Component, Path, PathBuf};

/// The cgroup interface of a hierarchy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Version {
    /// The unified hierarchy (`cgroup2`): controllers are enabled per subtree.
    V2,
    /// A cgroup v1 hierarchy with the `pids` controller (usually `/sys/fs/cgroup/pids`).
    V1,
}

/// The server's own cgroup in a hierarchy that has (or may have) the pids controller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Location {
    /// Which interface.
    pub(crate) version: Version,
    /// The server's own cgroup directory, e.g. `/sys/fs/cgroup/pids/` (v1, in the root).
    pub(crate) dir: PathBuf,
}

/// The server's own cgroup directories, cgroup v2 first, from the text of
/// `/proc/self/cgroup` and `/proc/self/mountinfo`. A hierarchy not mounted here, or whose
/// mount does not reach the server's cgroup (another cgroup namespace's view), is left out.
pub(crate) fn locate(cgroups: &str, mountinfo: &str) -> Vec<Location> {
    let mounts: Vec<Mount> = mountinfo.lines().filter_map(Mount::parse).collect();
    [Version::V2, Version::V1]
        .into_iter()
        .filter_map(|version| {
            let own = own_path(cgroups, version)?;
            let dir = mounts
                .iter()
                .filter(|mount| mount.holds(version))
                .find_map(|mount| mount.resolve(&own))?;
            Some(Location { version, dir })
        })
        .collect()
}

/// The server's cgroup path in the `version` hierarchy: the `0::<path>` line (v2) or the
/// line whose controllers include `pids` (v1).
fn own_path(cgroups: &str, version: Version) -> Option<PathBuf> {
    cgroups.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (id, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let matches = match version {
            Version::V2 => id == "0" && controllers.is_empty(),
            Version::V1 => controllers.split(',').any(|c| c == "pids"),
        };
        matches.then(|| PathBuf::from(path))
    })
}

/// One line of `/proc/self/mountinfo`, the fields used.
#[derive(Debug)]
struct Mount {
    /// The directory of the filesystem mounted (for cgroups: the cgroup seen as its root).
    root: PathBuf,
    /// Where it is mounted.
    point: PathBuf,
    fstype: String,
    /// Super-block options; for a v1 cgroup hierarchy these name its controllers.
    options: String,
}

impl Mount {
    /// `<id> <parent> <dev> <root> <point> <options> [optional…] - <fstype> <source> <super>`.
    fn parse(line: &str) -> Option<Self> {
        let (before, after) = line.split_once(" - ")?;
        let fields: Vec<&str> = before.split(' ').collect();
        let mut after = after.split(' ');
        let fstype = after.next()?.to_owned();
        let options = after.nth(1)?.to_owned();
        Some(Self {
            root: unescape(fields.get(3)?),
            point: unescape(fields.get(4)?),
            fstype,
            options,
        })
    }

    fn holds(&self, version: Version) -> bool {
        match version {
            Version::V2 => self.fstype == "cgroup2",
            Version::V1 => self.fstype == "cgroup" && self.options.split(',').any(|o| o == "pids"),
        }
    }

    /// The directory of cgroup `path` under this mount, if the mount reaches it.
    fn resolve(&self, path: &Path) -> Option<PathBuf> {
        let relative = path.strip_prefix(&self.root).ok()?;
        let plain = relative
            .components()
            .all(|c| matches!(c, Component::Normal(_)));
        plain.then(|| self.point.join(relative))
    }
}

/// A mountinfo path with its `\NNN` octal escapes (space, tab, newline, backslash) undone.
fn unescape(field: &str) -> PathBuf {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| bytes[i] == b'\\' && d.iter().all(|b| (b'0'..=b'7').contains(b)))
            .map(|d| d.iter().fold(0u32, |acc, b| acc * 8 + u32::from(b - b'0')));
        match octal.and_then(|value| u8::try_from(value).ok()) {
            Some(byte) => {
                out.push(byte);
                i += 4;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    PathBuf::from(OsString::from_vec(out))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// This machine's layout: v1 controllers at /sys/fs/cgroup/<name>, cgroup2 at unified.
    const HYBRID_CGROUP: &str = "9:name=systemd:/\n8:pids:/\n4:memory:/api/c30a\n0::/\n";
    const HYBRID_MOUNTS: &str = "\
37 30 0:33 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
41 30 0:37 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
43 30 0:39 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

    #[test]
    fn a_hybrid_machine_offers_its_cgroup2_root_then_the_v1_pids_hierarchy() {
        assert_eq!(
            locate(HYBRID_CGROUP, HYBRID_MOUNTS),
            vec![
                Location {
                    version: Version::V2,
                    dir: PathBuf::from("/sys/fs/cgroup/unified/"),
                },
                Location {
                    version: Version::V1,
                    dir: PathBuf::from("/sys/fs/cgroup/pids/"),
                },
            ]
        );
    }

    #[test]
    fn a_systemd_service_on_cgroup2_gets_its_own_group() {
        let cgroups = "0::/system.slice/agentd.service\n";
        let mounts =
            "29 23 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n";
        assert_eq!(
            locate(cgroups, mounts),
            vec![Location {
                version: Version::V2,
                dir: PathBuf::from("/sys/fs/cgroup/system.slice/agentd.service"),
            }]
        );
    }

    #[test]
    fn a_mount_of_a_subtree_resolves_paths_below_it_and_refuses_others() {
        let mounts = "50 40 0:26 /docker/abc /sys/fs/cgroup ro - cgroup2 cgroup2 rw\n";
        let inside = locate("0::/docker/abc/worker\n", mounts);
        assert_eq!(inside[0].dir, PathBuf::from("/sys/fs/cgroup/worker"));
        assert_eq!(locate("0::/../other\n", mounts), vec![]);
        assert_eq!(locate("0::/docker/xyz\n", mounts), vec![]);
    }

    #[test]
    fn v1_pids_may_share_a_hierarchy_with_other_controllers() {
        let cgroups = "3:cpu,pids:/agents\n";
        let mounts = "41 30 0:37 / /cg/cpu,pids rw - cgroup cgroup rw,cpu,pids\n";
        assert_eq!(
            locate(cgroups, mounts),
            vec![Location {
                version: Version::V1,
                dir: PathBuf::from("/cg/cpu,pids/agents"),
            }]
        );
    }

    #[test]
    fn no_pids_hierarchy_and_no_cgroup2_mount_means_nothing_found() {
        assert_eq!(
            locate("4:memory:/\n0::/\n", HYBRID_MOUNTS.lines().next().unwrap()),
            vec![]
        );
    }

    #[test]
    fn mountinfo_escapes_are_undone() {
        assert_eq!(unescape(r"/a\040b\134c\011"), PathBuf::from("/a b\\c\t"));
        assert_eq!(unescape(r"/x\9"), PathBuf::from(r"/x\9"));
    }
}
