//! Building the providers: one from the environment (`AGENTD_PROVIDER`, `AGENTD_BASE_URL`,
//! `AGENTD_API_KEY`), plus any named in the config file (`agentd.toml`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agentd_provider::{
    AnthropicConfig, AnthropicProvider, OpenAiConfig, OpenAiProvider, Provider, Providers,
    ProvidersConfig, Secret,
};
use anyhow::Context;

use crate::config::{ProviderChoice, ServeArgs};

/// The providers and the model for sessions that name none.
pub struct Built {
    /// Every provider, routing `NAME/model`.
    pub providers: Providers,
    /// The default model (`""` lets the default provider's `default_model` apply).
    pub model: String,
    /// For the start-up log: the default provider's name.
    pub default_name: String,
}

/// Builds the providers. Errors: an unreadable or invalid config file, a provider that
/// cannot be configured (bad URL, missing key variable).
pub fn build(args: &ServeArgs) -> anyhow::Result<Built> {
    let file = config_file(args.config.as_deref())?;
    let config: ProvidersConfig = match &file {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            toml::from_str(&text).with_context(|| format!("parsing {}", path.display()))?
        }
        None => ProvidersConfig::default(),
    };
    let mut providers = Providers::from_config(&config, |name| std::env::var(name).ok())
        .context("configuring providers from the config file")?;
    let name = args.provider.name();
    if !config.providers.contains_key(name) {
        providers.insert(name, from_env(args)?, None)?;
        if config.default_provider.is_none() {
            providers.set_default(name)?;
        }
    }
    let default_name = providers.default_name().unwrap_or(name).to_owned();
    let model = match (&args.model, &config.default_provider) {
        (Some(model), _) => model.clone(),
        (None, Some(_)) => String::new(),
        (None, None) => match args.provider {
            ProviderChoice::Openai => "deepseek-chat".to_owned(),
            ProviderChoice::Anthropic => "claude-sonnet-4-5".to_owned(),
        },
    };
    Ok(Built {
        providers,
        model,
        default_name,
    })
}

fn config_file(given: Option<&Path>) -> anyhow::Result<Option<PathBuf>> {
    match given {
        Some(path) if !path.exists() => {
            anyhow::bail!("AGENTD_CONFIG {} does not exist", path.display())
        }
        Some(path) => Ok(Some(path.to_owned())),
        None => {
            let default = PathBuf::from("agentd.toml");
            Ok(default.exists().then_some(default))
        }
    }
}

fn from_env(args: &ServeArgs) -> anyhow::Result<Arc<dyn Provider>> {
    Ok(match args.provider {
        ProviderChoice::Openai => Arc::new(
            OpenAiProvider::new(OpenAiConfig {
                api_key: args.api_key(),
                ..OpenAiConfig::new(args.base_url())
            })
            .context("configuring the model provider")?,
        ),
        ProviderChoice::Anthropic => Arc::new(
            AnthropicProvider::new(AnthropicConfig {
                base_url: args.base_url(),
                ..AnthropicConfig::new(args.api_key().map(Secret::new))
            })
            .context("configuring the Anthropic provider")?,
        ),
    })
}
