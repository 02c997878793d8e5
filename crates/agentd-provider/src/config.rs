//! [`ProvidersConfig`]: the `[providers.NAME]` tables of `agentd.toml`, as serde reads them.
//! Pure data and checks; [`crate::Providers::from_config`] builds providers from it.
//!
//! ```toml
//! default_provider = "deepseek"
//!
//! [providers.deepseek]
//! kind = "openai"
//! base_url = "https://api.deepseek.com"
//! api_key_env = "DEEPSEEK_API_KEY"
//! default_model = "deepseek-chat"
//!
//! [providers.claude]
//! kind = "anthropic"
//! api_key_env = "ANTHROPIC_API_KEY"
//! default_model = "claude-sonnet-4-5"
//! headers = { "anthropic-beta" = "interleaved-thinking-2025-05-14" }
//! max_attempts = 5
//! timeouts = { connect = 5, idle = 120, request = 900 }
//! ```
//!
//! Keys are never stored in the file: `api_key_env` names the environment variable that
//! holds one, and an `api_key` entry is rejected.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

use crate::{Error, Result};

/// All configured providers. Deserialises from a table with `default_provider` and
/// `providers`; other keys of the surrounding file are ignored, so the binary can read its
/// whole `agentd.toml` into this type too.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct ProvidersConfig {
    /// The provider a bare model name (no `NAME/` prefix) goes to. When unset and exactly
    /// one provider is configured, that one.
    #[serde(default)]
    pub default_provider: Option<String>,
    /// Providers by name. A name is non-empty and has no `/` (it prefixes model names).
    #[serde(default)]
    pub providers: BTreeMap<String, ProviderConfig>,
}

/// The wire format a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// OpenAI Chat Completions and compatible servers (DeepSeek, vLLM, llama.cpp, LM
    /// Studio, Ollama's `/v1`).
    Openai,
    /// Anthropic's Messages API.
    Anthropic,
}

/// One `[providers.NAME]` table. Unknown keys are rejected (typos would otherwise be
/// silently ignored).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    /// `openai` or `anthropic`.
    pub kind: ProviderKind,
    /// The API root; default `https://api.openai.com/v1` or `https://api.anthropic.com`.
    #[serde(default)]
    pub base_url: Option<String>,
    /// The environment variable holding the API key; none for servers without one. A named
    /// variable that is unset or empty is a configuration error.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// The model used when a request names only the provider (`NAME/`) or, for the default
    /// provider, no model at all.
    #[serde(default)]
    pub default_model: Option<String>,
    /// Extra headers sent on every request.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Attempts in all per request, the first included (default 3).
    #[serde(default)]
    pub max_attempts: Option<u32>,
    /// Timeouts in seconds; unset ones keep their defaults.
    #[serde(default)]
    pub timeouts: TimeoutsConfig,
    /// Anthropic only: `max_tokens` of every request (default 8192).
    #[serde(default)]
    pub max_tokens: Option<u32>,
    /// Anthropic only: enables extended thinking with this budget, in tokens.
    #[serde(default)]
    pub thinking_budget_tokens: Option<u32>,
    /// Anthropic only: the `anthropic-version` header (default `2023-06-01`).
    #[serde(default)]
    pub anthropic_version: Option<String>,
    /// Present only to reject it with a useful message: keys belong in the environment.
    #[serde(default, rename = "api_key")]
    api_key_in_file: Option<serde::de::IgnoredAny>,
}

impl ProviderConfig {
    /// A config of `kind` with every other setting at its default.
    pub fn new(kind: ProviderKind) -> Self {
        ProviderConfig {
            kind,
            base_url: None,
            api_key_env: None,
            default_model: None,
            headers: BTreeMap::new(),
            max_attempts: None,
            timeouts: TimeoutsConfig::default(),
            max_tokens: None,
            thinking_budget_tokens: None,
            anthropic_version: None,
            api_key_in_file: None,
        }
    }

    /// Rejects what serde cannot: a key written into the file.
    pub(crate) fn check(&self, name: &str) -> Result<()> {
        if self.api_key_in_file.is_some() {
            return Err(Error::Config(format!(
                "provider {name:?}: api_key is not read from the config file; put the key in \
                 an environment variable and name it with api_key_env"
            )));
        }
        Ok(())
    }
}

/// `timeouts = { connect, idle, request }`, in seconds (fractions allowed). See
/// [`crate::OpenAiConfig`] for what each one bounds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimeoutsConfig {
    /// TCP and TLS connect, default 10 s.
    #[serde(default)]
    pub connect: Option<f64>,
    /// Longest gap between bytes, default 300 s.
    #[serde(default)]
    pub idle: Option<f64>,
    /// Longest attempt from sending to the last byte, default 600 s.
    #[serde(default)]
    pub request: Option<f64>,
}

impl TimeoutsConfig {
    /// `value` seconds as a duration, or `default` when unset.
    ///
    /// # Errors
    /// [`Error::Config`] for a negative, zero, infinite or NaN value.
    pub(crate) fn pick(value: Option<f64>, default: Duration, what: &str) -> Result<Duration> {
        match value {
            None => Ok(default),
            Some(secs) if secs > 0.0 => Duration::try_from_secs_f64(secs)
                .map_err(|err| Error::Config(format!("timeouts.{what} = {secs}: {err}"))),
            Some(secs) => Err(Error::Config(format!(
                "timeouts.{what} = {secs}: must be a positive number of seconds"
            ))),
        }
    }
}
