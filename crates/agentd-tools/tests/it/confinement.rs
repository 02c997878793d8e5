//! File tools cannot reach outside the workspace: `..`, absolute paths and symlinks, also for
//! files that do not exist yet.

use std::os::unix::fs::symlink;

use agentd_tools::{ReadFileTool, ToolOutput, WriteFileTool};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::helpers::{call, done, workspace};

fn outside(path: &str, why: &str) -> ToolOutput {
    ToolOutput::error(format!(
        "`{path}` is outside the workspace ({why}); only files inside it can be used: give a \
         path relative to the workspace, like `src/main.rs`"
    ))
}

const THROUGH_SYMLINK: &str = "it leads outside through a symlink or `..`";

#[tokio::test]
async fn reading_dot_dot_out_of_the_workspace_is_refused() {
    let workspace = workspace();
    let output = call(
        &ReadFileTool,
        &workspace.ctx,
        json!({"path": "../../etc/passwd"}),
    )
    .await;
    assert_eq!(
        output,
        outside("../../etc/passwd", "`..` climbs above the workspace")
    );
    let output = call(&ReadFileTool, &workspace.ctx, json!({"path": "a/../../x"})).await;
    assert_eq!(
        output,
        outside("a/../../x", "`..` climbs above the workspace")
    );
}

#[tokio::test]
async fn reading_an_absolute_path_outside_is_refused() {
    let workspace = workspace();
    let output = call(
        &ReadFileTool,
        &workspace.ctx,
        json!({"path": "/etc/passwd"}),
    )
    .await;
    assert_eq!(
        output,
        outside("/etc/passwd", "an absolute path outside the workspace")
    );
}

#[tokio::test]
async fn an_absolute_path_inside_the_workspace_and_dot_dot_within_it_are_fine() {
    let workspace = workspace();
    std::fs::create_dir(workspace.dir.path().join("src")).unwrap();
    std::fs::write(workspace.dir.path().join("notes.txt"), "hi\n").unwrap();
    let absolute = workspace.dir.path().join("notes.txt");
    let output = call(
        &ReadFileTool,
        &workspace.ctx,
        json!({ "path": absolute.to_str().unwrap() }),
    )
    .await;
    assert_eq!(output, done("     1\thi\n"));
    let output = call(
        &ReadFileTool,
        &workspace.ctx,
        json!({"path": "src/../notes.txt"}),
    )
    .await;
    assert_eq!(output, done("     1\thi\n"));
}

#[tokio::test]
async fn reading_through_a_symlink_to_a_file_outside_is_refused() {
    let workspace = workspace();
    symlink("/etc/passwd", workspace.dir.path().join("passwd")).unwrap();
    let output = call(&ReadFileTool, &workspace.ctx, json!({"path": "passwd"})).await;
    assert_eq!(output, outside("passwd", THROUGH_SYMLINK));
}

#[tokio::test]
async fn writing_through_a_symlink_to_the_root_is_refused_and_changes_nothing() {
    let workspace = workspace();
    let outside_dir = tempfile::tempdir().unwrap();
    symlink("/", workspace.dir.path().join("root")).unwrap();
    let target = outside_dir.path().join("pwned.txt");
    let through = format!("root{}", target.display());
    let output = call(
        &WriteFileTool,
        &workspace.ctx,
        json!({"path": through, "content": "x"}),
    )
    .await;
    assert_eq!(output, outside(&through, THROUGH_SYMLINK));
    assert!(!target.exists());
    for path in ["root/etc/agentd-pwned", "root/tmp/agentd-new-dir/file"] {
        let output = call(
            &WriteFileTool,
            &workspace.ctx,
            json!({"path": path, "content": "x"}),
        )
        .await;
        assert_eq!(output, outside(path, THROUGH_SYMLINK));
    }
    assert!(!std::path::Path::new("/etc/agentd-pwned").exists());
    assert!(!std::path::Path::new("/tmp/agentd-new-dir").exists());
}

#[tokio::test]
async fn writing_a_new_file_through_a_dangling_symlink_outside_is_refused() {
    let workspace = workspace();
    let outside_dir = tempfile::tempdir().unwrap();
    let target = outside_dir.path().join("created-by-model.txt");
    symlink(&target, workspace.dir.path().join("innocent.txt")).unwrap();
    let output = call(
        &WriteFileTool,
        &workspace.ctx,
        json!({"path": "innocent.txt", "content": "x"}),
    )
    .await;
    assert_eq!(output, outside("innocent.txt", THROUGH_SYMLINK));
    assert!(!target.exists());
}

#[tokio::test]
async fn writing_an_absolute_path_outside_is_refused() {
    let workspace = workspace();
    let outside_dir = tempfile::tempdir().unwrap();
    let target = outside_dir.path().join("x.txt");
    let path = target.to_str().unwrap();
    let output = call(
        &WriteFileTool,
        &workspace.ctx,
        json!({"path": path, "content": "x"}),
    )
    .await;
    assert_eq!(
        output,
        outside(path, "an absolute path outside the workspace")
    );
    assert!(!target.exists());
}

#[tokio::test]
async fn symlinks_that_stay_inside_the_workspace_work() {
    let workspace = workspace();
    std::fs::create_dir(workspace.dir.path().join("real")).unwrap();
    symlink("real", workspace.dir.path().join("alias")).unwrap();
    let output = call(
        &WriteFileTool,
        &workspace.ctx,
        json!({"path": "alias/note.txt", "content": "inside\n"}),
    )
    .await;
    assert_eq!(output, done("Created `alias/note.txt` (7 bytes, 1 line)."));
    assert_eq!(
        std::fs::read_to_string(workspace.dir.path().join("real/note.txt")).unwrap(),
        "inside\n"
    );
}
