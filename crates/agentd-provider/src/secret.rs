//! [`Secret`]: an API key that never shows up in logs, `Debug` output or error messages.

use std::fmt;

/// A credential (API key, bearer token). `Debug` and `Display` print `[redacted]`; the value
/// is only reachable through [`Secret::expose`], which the HTTP layer calls once to build a
/// header marked sensitive. Not `Serialize`: a secret is never written back to a file.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps `value`.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The secret text, for building the request header and for nothing else.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Secret(value)
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Secret(value.to_owned())
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_and_display_never_show_the_value() {
        let secret = Secret::new("sk-live-123");
        let shown = format!("{secret} {secret:?} {secret:#?} {:?}", Some(&secret));
        assert_eq!(shown, "[redacted] [redacted] [redacted] Some([redacted])");
        assert_eq!(secret.expose(), "sk-live-123");
    }
}
