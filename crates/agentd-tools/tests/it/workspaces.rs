//! Per-session workspace directories.

use std::os::unix::fs::PermissionsExt;

use agentd_tools::Workspaces;
use pretty_assertions::assert_eq;
use uuid::Uuid;

const SESSION: Uuid = Uuid::from_u128(0x67e5_5044_10b1_426f_9247_bb68_0e5f_e0c8);

#[test]
fn a_workspace_path_is_the_root_joined_with_the_uuid() {
    let workspaces = Workspaces::new("/var/lib/agentd/workspaces".into());
    assert_eq!(
        workspaces.path(SESSION),
        std::path::PathBuf::from("/var/lib/agentd/workspaces/67e55044-10b1-426f-9247-bb680e5fe0c8")
    );
}

#[tokio::test]
async fn ensure_creates_the_workspace_and_missing_parents_with_mode_0700() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("state/workspaces");
    let workspaces = Workspaces::new(root.clone());
    let path = workspaces.ensure(SESSION).await.unwrap();
    assert_eq!(path, root.join("67e55044-10b1-426f-9247-bb680e5fe0c8"));
    for dir in [&path, &root, &tmp.path().join("state")] {
        let mode = std::fs::metadata(dir).unwrap().permissions().mode();
        assert_eq!(mode & 0o7777, 0o700, "{}", dir.display());
    }
}

#[tokio::test]
async fn ensure_keeps_an_existing_workspace_and_its_files() {
    let tmp = tempfile::tempdir().unwrap();
    let workspaces = Workspaces::new(tmp.path().to_path_buf());
    let path = workspaces.ensure(SESSION).await.unwrap();
    std::fs::write(path.join("notes.txt"), "kept").unwrap();
    assert_eq!(workspaces.ensure(SESSION).await.unwrap(), path);
    assert_eq!(
        std::fs::read_to_string(path.join("notes.txt")).unwrap(),
        "kept"
    );
}

#[tokio::test]
async fn remove_deletes_the_workspace_and_is_idempotent() {
    let tmp = tempfile::tempdir().unwrap();
    let workspaces = Workspaces::new(tmp.path().to_path_buf());
    let other = Uuid::from_u128(1);
    let path = workspaces.ensure(SESSION).await.unwrap();
    let kept = workspaces.ensure(other).await.unwrap();
    std::fs::create_dir(path.join("src")).unwrap();
    std::fs::write(path.join("src/main.rs"), "fn main() {}").unwrap();

    workspaces.remove(SESSION).await.unwrap();
    assert!(!path.exists());
    assert!(kept.is_dir());
    workspaces.remove(SESSION).await.unwrap();
    workspaces.remove(Uuid::from_u128(2)).await.unwrap();
}
