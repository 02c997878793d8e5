//! The command's environment: the allowlist, and nothing of the server's.

use agentd_tools::SAFE_PATH;
use pretty_assertions::assert_eq;

use crate::helpers::{bash, ok};

const CANARY: &str = "AGENTD_TEST_CANARY_SECRET";

#[tokio::test]
async fn only_allowlisted_variables_reach_the_command() {
    // SAFETY: set once, before this test spawns anything; no other test reads or writes
    // this variable, and std serialises its own environment access (Command captures the
    // environment under the same lock).
    #[allow(unsafe_code)]
    unsafe {
        std::env::set_var(CANARY, "sk-live-do-not-leak");
    }
    assert_eq!(std::env::var(CANARY).as_deref(), Ok("sk-live-do-not-leak"));

    let everything = bash("env").await;
    assert!(!everything.text.contains(CANARY), "{}", everything.text);
    assert!(
        !everything.text.contains("sk-live-do-not-leak"),
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
