//! list_dir, glob and grep on a real tree, `.gitignore` respected, output bounded.

use std::os::unix::fs::symlink;

use agentd_tools::{GlobTool, GrepTool, ListDirTool, ToolOutput};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::helpers::{Workspace, call, done, workspace};

/// A small project: sources, an ignored build directory, a hidden file, git internals, a
/// binary file, agentd's own output directory and a symlink out of the workspace.
fn project() -> Workspace {
    let workspace = workspace();
    let root = workspace.dir.path();
    for (path, content) in [
        (".gitignore", "target/\n*.log\n"),
        (".env.example", "TOKEN=changeme\n"),
        ("Cargo.toml", "[package]\nname = \"demo\"\n"),
        ("src/main.rs", "fn main() {\n    helper();\n}\n"),
        ("src/util/helper.rs", "pub fn helper() {}\n// TODO: more\n"),
        ("target/debug/main.rs", "fn main() {} // built\n"),
        ("debug.log", "fn main in a log\n"),
        (".git/HEAD", "ref: refs/heads/main fn main\n"),
        (".agentd/output/call-1.log", "fn main() from an old call\n"),
    ] {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }
    std::fs::write(root.join("src/blob.bin"), b"fn main\x00\x01").unwrap();
    symlink("/etc", root.join("etc-link")).unwrap();
    workspace
}

#[tokio::test]
async fn list_dir_shows_kinds_sizes_and_symlink_targets() {
    let workspace = project();
    let output = call(&ListDirTool, &workspace.ctx, json!({})).await;
    assert_eq!(
        output,
        done(
            ".agentd/\n.env.example  (15 bytes)\n.git/\n.gitignore  (14 bytes)\n\
             Cargo.toml  (24 bytes)\ndebug.log  (17 bytes)\netc-link -> /etc\nsrc/\ntarget/\n"
        )
    );
    let output = call(&ListDirTool, &workspace.ctx, json!({"path": "src"})).await;
    assert_eq!(
        output,
        done("blob.bin  (9 bytes)\nmain.rs  (28 bytes)\nutil/\n")
    );
}

#[tokio::test]
async fn list_dir_refuses_outside_and_non_directories() {
    let workspace = project();
    let output = call(&ListDirTool, &workspace.ctx, json!({"path": "etc-link"})).await;
    assert_eq!(
        output,
        ToolOutput::error(
            "`etc-link` is outside the workspace (it leads outside through a symlink or `..`); \
             only files inside it can be used: give a path relative to the workspace, like \
             `src/main.rs`"
        )
    );
    let output = call(&ListDirTool, &workspace.ctx, json!({"path": "Cargo.toml"})).await;
    assert_eq!(output, ToolOutput::error("`Cargo.toml` is not a directory"));
}

#[tokio::test]
async fn glob_matches_paths_respecting_gitignore() {
    let workspace = project();
    let output = call(&GlobTool, &workspace.ctx, json!({"pattern": "**/*.rs"})).await;
    assert_eq!(output, done("src/main.rs\nsrc/util/helper.rs\n"));
    let output = call(&GlobTool, &workspace.ctx, json!({"pattern": "*"})).await;
    assert_eq!(
        output,
        done(".env.example\n.gitignore\nCargo.toml\netc-link\nsrc/\n")
    );
    let output = call(
        &GlobTool,
        &workspace.ctx,
        json!({"pattern": "*.rs", "path": "src/util"}),
    )
    .await;
    assert_eq!(output, done("src/util/helper.rs\n"));
}

#[tokio::test]
async fn glob_says_when_nothing_matches_and_explains_bad_patterns() {
    let workspace = project();
    let output = call(&GlobTool, &workspace.ctx, json!({"pattern": "**/*.py"})).await;
    assert_eq!(output, done("No paths match `**/*.py` in `.`."));
    let output = call(&GlobTool, &workspace.ctx, json!({"pattern": "src/[a-"})).await;
    assert_eq!(
        output,
        ToolOutput::error("invalid glob pattern `src/[a-`: unclosed character class; missing ']'")
    );
    let output = call(
        &GlobTool,
        &workspace.ctx,
        json!({"pattern": "*", "path": "../"}),
    )
    .await;
    assert!(output.is_error, "{output:?}");
}

#[tokio::test]
async fn grep_finds_lines_skipping_ignored_binary_git_and_agentd_files() {
    let workspace = project();
    let output = call(&GrepTool, &workspace.ctx, json!({"pattern": "fn main"})).await;
    assert_eq!(output, done("src/main.rs:1:fn main() {\n"));
    let output = call(
        &GrepTool,
        &workspace.ctx,
        json!({"pattern": "HELPER", "case_insensitive": true, "glob": "*.rs"}),
    )
    .await;
    assert_eq!(
        output,
        done("src/main.rs:2:    helper();\nsrc/util/helper.rs:1:pub fn helper() {}\n")
    );
    let output = call(
        &GrepTool,
        &workspace.ctx,
        json!({"pattern": "TODO", "path": "src/util/helper.rs"}),
    )
    .await;
    assert_eq!(output, done("src/util/helper.rs:2:// TODO: more\n"));
}

#[tokio::test]
async fn grep_output_is_bounded() {
    let workspace = workspace();
    let lines: String = (1..=1000).map(|n| format!("match {n}\n")).collect();
    std::fs::write(workspace.dir.path().join("big.txt"), lines).unwrap();
    let output = call(&GrepTool, &workspace.ctx, json!({"pattern": "match"})).await;
    let expected: String = (1..=200)
        .map(|n| format!("big.txt:{n}:match {n}\n"))
        .collect();
    assert_eq!(
        output,
        ToolOutput {
            text: format!(
                "{expected}[stopped after 200 matching lines; narrow the pattern, path or glob]"
            ),
            is_error: false,
            exit_code: None,
            truncated: true,
        }
    );
}

#[tokio::test]
async fn grep_explains_bad_regexes_and_reports_no_matches() {
    let workspace = project();
    let output = call(
        &GrepTool,
        &workspace.ctx,
        json!({"pattern": "nothing-here"}),
    )
    .await;
    assert_eq!(output, done("No matches for `nothing-here` in `.`."));
    let output = call(&GrepTool, &workspace.ctx, json!({"pattern": "fn main("})).await;
    assert!(output.is_error);
    assert!(
        output
            .text
            .starts_with("invalid regular expression `fn main(`: regex parse error"),
        "{}",
        output.text
    );
    let output = call(
        &GrepTool,
        &workspace.ctx,
        json!({"pattern": "root", "path": "etc-link/passwd"}),
    )
    .await;
    assert_eq!(
        output,
        ToolOutput::error(
            "`etc-link/passwd` is outside the workspace (it leads outside through a symlink or \
             `..`); only files inside it can be used: give a path relative to the workspace, \
             like `src/main.rs`"
        )
    );
}
