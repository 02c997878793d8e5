//! The command's environment: the allowlist, and nothing of the server's.

use agentd_tools::SAFE_PATH;
use pretty_assertions::assert_eq;

use crate::helpers::{CANARY, CANARY_VALUE, bash, ok, set_canary};

#[tokio::test]
async fn only_allowlisted_variables_reach_the_command() {
    set_canary();

    let everything = bash("env").await;
    assert!(!everything.text.contains(CANARY), "{}", everything.text);
    assert!(
        !everything.text.contains(CANARY_VALUE),
        "{}",
        everything.text
    );
    assert_eq!(
        bash("env | cut -d= -f1 | sort").await,
        // PWD, SHLVL and _ are bash's own.
        ok("HOME\nLANG\nPATH\nPWD\nSHLVL\nTERM\n_\n")
    );
}

#[tokio::test]
async fn path_lang_and_term_have_their_fixed_values() {
    assert_eq!(
        bash("printf '%s\\n' \"$PATH\" \"$LANG\" \"$TERM\"").await,
        ok(&format!("{SAFE_PATH}\nC.UTF-8\ndumb\n"))
    );
}
