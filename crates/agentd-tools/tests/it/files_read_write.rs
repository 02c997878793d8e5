//! read_file, write_file and edit_file on real files: exact results and actionable errors.

use agentd_tools::{EditFileTool, ReadFileTool, Tool, ToolOutput, WriteFileTool};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::helpers::{Workspace, call, done, workspace};

fn file(workspace: &Workspace, path: &str, content: &[u8]) {
    let path = workspace.dir.path().join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

fn content(workspace: &Workspace, path: &str) -> String {
    std::fs::read_to_string(workspace.dir.path().join(path)).unwrap()
}

async fn read(workspace: &Workspace, arguments: Value) -> ToolOutput {
    call(&ReadFileTool, &workspace.ctx, arguments).await
}

async fn edit(workspace: &Workspace, arguments: Value) -> ToolOutput {
    call(&EditFileTool, &workspace.ctx, arguments).await
}

#[tokio::test]
async fn read_file_numbers_lines_and_pages_with_offset_and_limit() {
    let workspace = workspace();
    file(&workspace, "five.txt", b"one\ntwo\r\nthree\nfour\nfive");
    assert_eq!(
        read(&workspace, json!({"path": "five.txt"})).await,
        done("     1\tone\n     2\ttwo\n     3\tthree\n     4\tfour\n     5\tfive\n")
    );
    assert_eq!(
        read(
            &workspace,
            json!({"path": "five.txt", "offset": 2, "limit": 2})
        )
        .await,
        ToolOutput {
            text: "     2\ttwo\n     3\tthree\n[showing 2 lines; the file continues after line 3: \
                   read more with offset=4]"
                .to_owned(),
            is_error: false,
            exit_code: None,
            truncated: true,
        }
    );
    assert_eq!(
        read(&workspace, json!({"path": "five.txt", "offset": 9})).await,
        ToolOutput::error("offset 9 is past the end of `five.txt`, which has 5 lines")
    );
}

#[tokio::test]
async fn read_file_caps_long_lines_and_large_files() {
    let workspace = workspace();
    let long = "x".repeat(5000);
    file(
        &workspace,
        "long.txt",
        format!("{long}\nshort\n").as_bytes(),
    );
    assert_eq!(
        read(&workspace, json!({"path": "long.txt"})).await,
        done(&format!(
            "     1\t{} [… line cut at 2000 bytes]\n     2\tshort\n",
            "x".repeat(2000)
        ))
    );
    let many: String = (1..=3000).map(|n| format!("line {n}\n")).collect();
    file(&workspace, "many.txt", many.as_bytes());
    let output = read(&workspace, json!({"path": "many.txt"})).await;
    assert!(output.truncated);
    assert!(
        output.text.ends_with(
            "  2000\tline 2000\n[showing 2000 lines; the file continues after line 2000: read \
             more with offset=2001]"
        ),
        "{}",
        &output.text[output.text.len() - 200..]
    );
}

#[tokio::test]
async fn read_file_refuses_binary_files_and_directories_and_reports_missing_ones() {
    let workspace = workspace();
    file(&workspace, "blob.bin", b"\x7fELF\x00\x01\x02");
    std::fs::create_dir(workspace.dir.path().join("dir")).unwrap();
    assert_eq!(
        read(&workspace, json!({"path": "blob.bin"})).await,
        ToolOutput::error(
            "`blob.bin` is a binary file (7 bytes); read_file only shows text. Inspect it with \
             bash instead, e.g. `file blob.bin` or `xxd blob.bin | head`"
        )
    );
    assert_eq!(
        read(&workspace, json!({"path": "dir"})).await,
        ToolOutput::error("`dir` is a directory, not a file")
    );
    assert_eq!(
        read(&workspace, json!({"path": "nope.txt"})).await,
        ToolOutput::error("`nope.txt` does not exist")
    );
    file(&workspace, "empty.txt", b"");
    assert_eq!(
        read(&workspace, json!({"path": "empty.txt"})).await,
        done("(`empty.txt` is empty)")
    );
}

#[tokio::test]
async fn read_file_argument_errors_say_what_to_send() {
    let workspace = workspace();
    assert_eq!(
        read(&workspace, json!({})).await,
        ToolOutput::error(
            "missing required argument `path`: the file to read, as in {\"path\": \"src/main.rs\"}"
        )
    );
    assert_eq!(
        read(&workspace, json!({"path": "a", "offset": 0})).await,
        ToolOutput::error("argument `offset` must be a whole number of at least 1, got 0")
    );
}

#[tokio::test]
async fn write_file_creates_parents_and_replaces_existing_files() {
    let workspace = workspace();
    let arguments = json!({"path": "a/b/c.txt", "content": "one\ntwo\n"});
    assert_eq!(
        call(&WriteFileTool, &workspace.ctx, arguments).await,
        done("Created `a/b/c.txt` (8 bytes, 2 lines).")
    );
    let arguments = json!({"path": "a/b/c.txt", "content": "new"});
    assert_eq!(
        call(&WriteFileTool, &workspace.ctx, arguments).await,
        done("Replaced `a/b/c.txt` (3 bytes, 1 line).")
    );
    assert_eq!(content(&workspace, "a/b/c.txt"), "new");
    let arguments = json!({"path": "a/b", "content": "x"});
    assert_eq!(
        call(&WriteFileTool, &workspace.ctx, arguments).await,
        ToolOutput::error("`a/b` is a directory, not a file")
    );
}

#[tokio::test]
async fn edit_file_replaces_a_unique_string() {
    let workspace = workspace();
    file(&workspace, "main.rs", b"fn main() {\n    let x = 1;\n}\n");
    let arguments =
        json!({"path": "main.rs", "old_string": "let x = 1;", "new_string": "let x = 2;"});
    assert_eq!(
        edit(&workspace, arguments).await,
        done("Replaced 1 occurrence in `main.rs` (line 2).")
    );
    assert_eq!(
        content(&workspace, "main.rs"),
        "fn main() {\n    let x = 2;\n}\n"
    );
}

#[tokio::test]
async fn edit_file_refuses_an_ambiguous_or_missing_string_and_changes_nothing() {
    let workspace = workspace();
    let original = "a = 1\nb = 1\nc = 1\n";
    file(&workspace, "conf", original.as_bytes());
    let ambiguous = json!({"path": "conf", "old_string": "= 1", "new_string": "= 2"});
    assert_eq!(
        edit(&workspace, ambiguous).await,
        ToolOutput::error(
            "`old_string` occurs 3 times in `conf` (lines 1, 2, 3); include more surrounding \
             lines to make it unique, or set `replace_all: true` to replace every occurrence"
        )
    );
    let missing = json!({"path": "conf", "old_string": "d = 1", "new_string": "d = 2"});
    assert_eq!(
        edit(&workspace, missing).await,
        ToolOutput::error(
            "`old_string` was not found in `conf`. It must match the file exactly, including \
             whitespace, indentation and line breaks: read_file the part you want to change \
             and copy it without the line numbers"
        )
    );
    assert_eq!(content(&workspace, "conf"), original);
}

#[tokio::test]
async fn edit_file_replaces_every_occurrence_when_asked() {
    let workspace = workspace();
    file(&workspace, "conf", b"a = 1\nb = 1\nc = 1\n");
    let arguments =
        json!({"path": "conf", "old_string": "= 1", "new_string": "= 2", "replace_all": true});
    assert_eq!(
        edit(&workspace, arguments).await,
        done("Replaced 3 occurrences in `conf` (lines 1, 2, 3).")
    );
    assert_eq!(content(&workspace, "conf"), "a = 2\nb = 2\nc = 2\n");
}

#[tokio::test]
async fn edit_file_argument_errors_are_actionable() {
    let workspace = workspace();
    file(&workspace, "f", b"text\n");
    assert_eq!(
        edit(
            &workspace,
            json!({"path": "f", "old_string": "", "new_string": "x"})
        )
        .await,
        ToolOutput::error(
            "`old_string` is empty: give the exact text to replace (to create a file, use \
             write_file)"
        )
    );
    assert_eq!(
        edit(
            &workspace,
            json!({"path": "f", "old_string": "t", "new_string": "t"})
        )
        .await,
        ToolOutput::error("`old_string` and `new_string` are the same: nothing would change")
    );
    assert_eq!(
        edit(
            &workspace,
            json!({"path": "missing", "old_string": "a", "new_string": "b"})
        )
        .await,
        ToolOutput::error("`missing` does not exist")
    );
    let flag = json!({"path": "f", "old_string": "t", "new_string": "T", "replace_all": "yes"});
    assert_eq!(
        edit(&workspace, flag).await,
        ToolOutput::error("argument `replace_all` must be true or false, got a string")
    );
}

#[test]
fn file_tool_specs_require_their_arguments() {
    let required = |tool: &dyn Tool| tool.spec().parameters["required"].clone();
    assert_eq!(required(&ReadFileTool), json!(["path"]));
    assert_eq!(required(&WriteFileTool), json!(["path", "content"]));
    assert_eq!(
        required(&EditFileTool),
        json!(["path", "old_string", "new_string"])
    );
}
