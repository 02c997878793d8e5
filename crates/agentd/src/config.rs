//! `agentd serve` configuration: flags, each also read from an `AGENTD_*` variable.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use agentd_tools::SandboxRequest;
use clap::{Args, ValueEnum};

/// The wire format of the provider configured by environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProviderChoice {
    /// OpenAI Chat Completions and compatible servers.
    Openai,
    /// Anthropic's Messages API.
    Anthropic,
}

impl ProviderChoice {
    /// The provider's name in the registry (the `NAME/` model prefix).
    pub fn name(self) -> &'static str {
        match self {
            ProviderChoice::Openai => "openai",
            ProviderChoice::Anthropic => "anthropic",
        }
    }
}

/// Defaults point at DeepSeek; any OpenAI-compatible server works (OpenAI, vLLM, llama.cpp,
/// Ollama's `/v1`).
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "AGENTD_ADDR", default_value = "127.0.0.1:8080")]
    pub addr: SocketAddr,

    /// Folder for the database and the session workspaces (created if missing).
    #[arg(long, env = "AGENTD_DATA_DIR", default_value = "./data")]
    pub data_dir: PathBuf,

    /// Database URL; default `sqlite://<data dir>/agentd.db` (created if missing).
    #[arg(long, env = "AGENTD_DATABASE_URL")]
    pub database_url: Option<String>,

    /// Wire format of the default provider: `openai` (any OpenAI-compatible server) or
    /// `anthropic` (the Messages API).
    #[arg(long, env = "AGENTD_PROVIDER", value_enum, default_value_t = ProviderChoice::Openai)]
    pub provider: ProviderChoice,

    /// Base URL of the default provider; default `https://api.deepseek.com/v1` (openai) or
    /// `https://api.anthropic.com` (anthropic).
    #[arg(long, env = "AGENTD_BASE_URL")]
    pub base_url: Option<String>,

    /// API key of the default provider; else `DEEPSEEK_API_KEY`, else `OPENAI_API_KEY`
    /// (openai) or `ANTHROPIC_API_KEY` (anthropic); none for local servers.
    #[arg(long, env = "AGENTD_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,

    /// Model for sessions that name none; `provider/model` picks a named provider. Default
    /// `deepseek-chat` (openai) or `claude-sonnet-4-5` (anthropic), or the config file's
    /// default provider's `default_model`.
    #[arg(long, env = "AGENTD_MODEL")]
    pub model: Option<String>,

    /// A TOML file of named providers (`[providers.NAME]`, see README); default
    /// `./agentd.toml` when it exists.
    #[arg(long, env = "AGENTD_CONFIG")]
    pub config: Option<PathBuf>,

    /// System prompt for sessions that set none.
    #[arg(long, env = "AGENTD_SYSTEM_PROMPT")]
    pub system_prompt: Option<String>,

    /// Model requests per turn at most.
    #[arg(long, env = "AGENTD_MAX_STEPS", default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_steps: u32,

    /// Wall-clock limit of one tool call, in seconds.
    #[arg(long, env = "AGENTD_TOOL_TIMEOUT_SECS", default_value_t = 120, value_parser = clap::value_parser!(u64).range(1..))]
    pub tool_timeout_secs: u64,

    /// Tool sandbox: `auto` (bubblewrap if it works here, else Landlock + seccomp, else
    /// refuse to start), `bwrap`, `landlock`, or `none` (tools run with the server's own
    /// rights).
    #[arg(long, env = "AGENTD_SANDBOX", default_value = "auto")]
    pub sandbox: SandboxRequest,

    /// Let sandboxed tool processes use the network.
    #[arg(long, env = "AGENTD_SANDBOX_NETWORK", default_value_t = false)]
    pub sandbox_network: bool,

    /// Bearer token required on every route but `/healthz`; required to bind a non-loopback address.
    #[arg(long, env = "AGENTD_TOKEN", hide_env_values = true)]
    pub token: Option<String>,

    /// Origins (comma-separated, e.g. `https://ui.example`) whose pages may call the API (CORS).
    #[arg(long, env = "AGENTD_CORS_ORIGINS", value_delimiter = ',')]
    pub cors_origins: Vec<String>,

    /// Extra `Host` header values to accept (comma-separated `name[:port]`), e.g. behind a proxy.
    #[arg(long, env = "AGENTD_ALLOWED_HOSTS", value_delimiter = ',')]
    pub allowed_hosts: Vec<String>,

    /// A running turn's lease, in seconds: if its process dies, another process on the same
    /// database closes it as `interrupted` once the lease lapses.
    #[arg(long, env = "AGENTD_TURN_LEASE_SECS", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..))]
    pub turn_lease_secs: u64,

    /// On SIGTERM/Ctrl-C, how long running turns may go on before they end `interrupted`, in seconds.
    #[arg(long, env = "AGENTD_SHUTDOWN_GRACE_SECS", default_value_t = 10)]
    pub shutdown_grace_secs: u64,
}

impl ServeArgs {
    /// The database URL to open.
    pub fn database_url(&self) -> String {
        self.database_url
            .clone()
            .unwrap_or_else(|| format!("sqlite://{}", self.data_dir.join("agentd.db").display()))
    }

    /// The API key from the flag or the first of the usual variables that is set and non-empty.
    pub fn api_key(&self) -> Option<String> {
        let fallbacks: &[&str] = match self.provider {
            ProviderChoice::Openai => &["DEEPSEEK_API_KEY", "OPENAI_API_KEY"],
            ProviderChoice::Anthropic => &["ANTHROPIC_API_KEY"],
        };
        self.api_key
            .clone()
            .into_iter()
            .chain(fallbacks.iter().filter_map(|name| std::env::var(name).ok()))
            .find(|key| !key.trim().is_empty())
    }

    /// The default provider's base URL.
    pub fn base_url(&self) -> String {
        self.base_url
            .clone()
            .unwrap_or_else(|| match self.provider {
                ProviderChoice::Openai => "https://api.deepseek.com/v1".to_owned(),
                ProviderChoice::Anthropic => "https://api.anthropic.com".to_owned(),
            })
    }

    /// The token, if set and non-empty.
    pub fn token(&self) -> Option<String> {
        self.token.clone().filter(|t| !t.trim().is_empty())
    }

    /// The tool timeout.
    pub fn tool_timeout(&self) -> Duration {
        Duration::from_secs(self.tool_timeout_secs)
    }

    /// The shutdown grace period.
    pub fn shutdown_grace(&self) -> Duration {
        Duration::from_secs(self.shutdown_grace_secs)
    }
}
