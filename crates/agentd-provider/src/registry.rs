//! [`Providers`]: several named providers behind one [`Provider`], routing each request by
//! its model name: `NAME/model` goes to provider NAME with `model`, anything else (also a
//! model with a `/` of its own, like `meta-llama/Llama-3.1-8B`, whose prefix names no
//! provider) goes whole to the default provider.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use agentd_events::{Chunk, ErrorInfo, Finish};

use crate::config::{ProviderConfig, ProviderKind, ProvidersConfig, TimeoutsConfig};
use crate::{
    AnthropicConfig, AnthropicProvider, Error, ModelRequest, OpenAiConfig, OpenAiProvider,
    Provider, ProviderEvent, ProviderStream, Result, RetryConfig, Secret,
};

/// Named providers and the default one. Itself a [`Provider`]; cheap to share in an `Arc`.
#[derive(Clone, Default)]
pub struct Providers {
    entries: BTreeMap<String, Entry>,
    default: Option<String>,
}

#[derive(Clone)]
struct Entry {
    provider: Arc<dyn Provider>,
    default_model: Option<String>,
}

impl Providers {
    /// No providers yet; add them with [`Providers::insert`].
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) provider `name`. The first one added is the default until
    /// [`Providers::set_default`] says otherwise.
    ///
    /// # Errors
    /// [`Error::Config`] when `name` is empty or contains `/`.
    pub fn insert(
        &mut self,
        name: &str,
        provider: Arc<dyn Provider>,
        default_model: Option<String>,
    ) -> Result<()> {
        if name.is_empty() || name.contains('/') {
            return Err(Error::Config(format!(
                "provider name {name:?} must be non-empty and without '/'"
            )));
        }
        self.default.get_or_insert_with(|| name.to_owned());
        let entry = Entry {
            provider,
            default_model: default_model.filter(|m| !m.is_empty()),
        };
        self.entries.insert(name.to_owned(), entry);
        Ok(())
    }

    /// Makes `name` the provider of bare model names.
    ///
    /// # Errors
    /// [`Error::Config`] when no provider has that name.
    pub fn set_default(&mut self, name: &str) -> Result<()> {
        if !self.entries.contains_key(name) {
            return Err(Error::Config(format!(
                "default_provider {name:?} is not a configured provider"
            )));
        }
        self.default = Some(name.to_owned());
        Ok(())
    }

    /// Builds every provider of `config`, reading each `api_key_env` through `env` (pass
    /// `|name| std::env::var(name).ok()` in the binary; tests pass a map).
    ///
    /// # Errors
    /// [`Error::Config`] for a bad name, an unknown default, a key written into the file, a
    /// named key variable that is unset or empty, a bad timeout; the provider constructors'
    /// errors otherwise. Every message names the provider.
    pub fn from_config(
        config: &ProvidersConfig,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self> {
        let mut providers = Providers::new();
        for (name, entry) in &config.providers {
            let provider = build(name, entry, &env).map_err(|err| match err {
                Error::Config(message) if message.starts_with("provider ") => {
                    Error::Config(message)
                }
                other => Error::Config(format!("provider {name:?}: {other}")),
            })?;
            providers.insert(name, provider, entry.default_model.clone())?;
        }
        if let Some(name) = &config.default_provider {
            providers.set_default(name)?;
        }
        Ok(providers)
    }

    /// The provider names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.keys().map(String::as_str)
    }

    /// The default provider's name, if any provider is configured.
    pub fn default_name(&self) -> Option<&str> {
        self.default.as_deref()
    }

    /// Where a request for `model` goes: the provider's name and the model name it is sent
    /// with. `NAME/model` → (NAME, model); `NAME/` or `""` → that provider's (or the
    /// default's) `default_model`; anything else → (default, `model` whole). `None` when
    /// there is no provider, or no model to send.
    pub fn route(&self, model: &str) -> Option<(&str, String)> {
        let (name, model) = match model.split_once('/') {
            Some((prefix, rest)) if self.entries.contains_key(prefix) => (prefix, rest),
            _ => (self.default.as_deref()?, model),
        };
        let (name, entry) = self.entries.get_key_value(name)?;
        let model = match model.is_empty() {
            true => entry.default_model.clone()?,
            false => model.to_owned(),
        };
        Some((name.as_str(), model))
    }
}

impl Provider for Providers {
    /// Sends `request` to the provider [`Providers::route`] picks, with the routed model
    /// name. An unroutable request yields one `finish {kind: error}` (`provider_not_found`).
    fn stream(&self, mut request: ModelRequest) -> ProviderStream {
        let Some((name, model)) = self.route(&request.model) else {
            let message = match self.default {
                None => "no model provider is configured".to_owned(),
                Some(_) => format!(
                    "no provider for model {:?} (and no default_model to use)",
                    request.model
                ),
            };
            let finish =
                Chunk::Finish(Finish::error(ErrorInfo::new("provider_not_found", message)));
            return Box::pin(futures_util::stream::iter([ProviderEvent::Chunk(finish)]));
        };
        let provider = match self.entries.get(name) {
            Some(entry) => Arc::clone(&entry.provider),
            None => return Box::pin(futures_util::stream::empty()),
        };
        request.model = model;
        provider.stream(request)
    }
}

impl fmt::Debug for Providers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let models: BTreeMap<&str, &Option<String>> = self
            .entries
            .iter()
            .map(|(name, entry)| (name.as_str(), &entry.default_model))
            .collect();
        f.debug_struct("Providers")
            .field("default", &self.default)
            .field("default_models", &models)
            .finish()
    }
}

/// One provider from its table.
fn build(
    name: &str,
    config: &ProviderConfig,
    env: &impl Fn(&str) -> Option<String>,
) -> Result<Arc<dyn Provider>> {
    config.check(name)?;
    let key = match &config.api_key_env {
        None => None,
        Some(var) => match env(var).filter(|key| !key.trim().is_empty()) {
            Some(key) => Some(Secret::from(key)),
            None => {
                return Err(Error::Config(format!(
                    "provider {name:?}: environment variable {var} (its api_key_env) is not set"
                )));
            }
        },
    };
    let timeouts = config.timeouts;
    let connect = TimeoutsConfig::pick(timeouts.connect, Duration::from_secs(10), "connect")?;
    let idle = TimeoutsConfig::pick(timeouts.idle, Duration::from_secs(300), "idle")?;
    let request = TimeoutsConfig::pick(timeouts.request, Duration::from_secs(600), "request")?;
    let retry = RetryConfig {
        max_attempts: config
            .max_attempts
            .unwrap_or(RetryConfig::default().max_attempts),
        ..RetryConfig::default()
    };
    Ok(match config.kind {
        ProviderKind::Openai => {
            let base_url = config
                .base_url
                .clone()
                .unwrap_or_else(|| OpenAiConfig::default().base_url);
            Arc::new(OpenAiProvider::new(OpenAiConfig {
                api_key: key.map(|key| key.expose().to_owned()),
                headers: config.headers.clone(),
                connect_timeout: connect,
                idle_timeout: idle,
                request_timeout: request,
                retry,
                ..OpenAiConfig::new(base_url)
            })?)
        }
        ProviderKind::Anthropic => {
            let defaults = AnthropicConfig::new(key);
            Arc::new(AnthropicProvider::new(AnthropicConfig {
                base_url: config.base_url.clone().unwrap_or(defaults.base_url.clone()),
                version: config
                    .anthropic_version
                    .clone()
                    .unwrap_or(defaults.version.clone()),
                max_tokens: config.max_tokens.unwrap_or(defaults.max_tokens),
                thinking_budget_tokens: config.thinking_budget_tokens,
                headers: config.headers.clone(),
                connect_timeout: connect,
                idle_timeout: idle,
                request_timeout: request,
                retry,
                ..defaults
            })?)
        }
    })
}
