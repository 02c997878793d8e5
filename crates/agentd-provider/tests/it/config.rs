//! `agentd.toml` provider tables read with serde, keys from the environment, the `Providers`
//! registry routing `NAME/model`, and extra headers reaching the wire.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use agentd_events::{Chunk, Finish, FinishKind, Message};
use agentd_provider::{
    Error, ModelRequest, Provider, ProviderEvent, ProviderKind, ProviderStream, Providers,
    ProvidersConfig, Secret,
};
use futures_util::StreamExt;
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::server::{ok_sse, serve};
use crate::support::{delta, sse};

const TOML: &str = r#"
log_level = "info"            # a key of the binary's, ignored here
default_provider = "deepseek"

[providers.deepseek]
kind = "openai"
base_url = "https://api.deepseek.com"
api_key_env = "TEST_DEEPSEEK_KEY"
default_model = "deepseek-chat"
max_attempts = 5
timeouts = { connect = 2.5, idle = 120 }

[providers.claude]
kind = "anthropic"
api_key_env = "TEST_ANTHROPIC_KEY"
default_model = "claude-sonnet-4-5"
headers = { "anthropic-beta" = "interleaved-thinking-2025-05-14" }
thinking_budget_tokens = 2048
"#;

fn env(name: &str) -> Option<String> {
    match name {
        "TEST_DEEPSEEK_KEY" => Some("sk-ds".to_owned()),
        "TEST_ANTHROPIC_KEY" => Some("sk-ant".to_owned()),
        _ => None,
    }
}

#[test]
fn toml_tables_deserialise_and_build_a_registry_with_routes() {
    let config: ProvidersConfig = toml::from_str(TOML).unwrap();
    let deepseek = &config.providers["deepseek"];
    assert_eq!(
        (
            deepseek.kind,
            deepseek.max_attempts,
            deepseek.timeouts.connect,
            deepseek.timeouts.request
        ),
        (ProviderKind::Openai, Some(5), Some(2.5), None)
    );
    assert_eq!(config.providers["claude"].kind, ProviderKind::Anthropic);
    let providers = Providers::from_config(&config, env).unwrap();
    let route = |model: &str| {
        providers
            .route(model)
            .map(|(name, model)| (name.to_owned(), model))
    };
    let some = |name: &str, model: &str| Some((name.to_owned(), model.to_owned()));
    assert_eq!(
        [
            route("claude/claude-opus-4"),
            route("claude/"),
            route("deepseek-reasoner"),
            route(""),
            route("meta-llama/Llama-3.1-8B"),
        ],
        [
            some("claude", "claude-opus-4"),
            some("claude", "claude-sonnet-4-5"),
            some("deepseek", "deepseek-reasoner"),
            some("deepseek", "deepseek-chat"),
            some("deepseek", "meta-llama/Llama-3.1-8B"),
        ]
    );
    let shown = format!("{providers:?}");
    assert!(!shown.contains("sk-"), "{shown}");
}

#[test]
fn a_key_in_the_file_a_missing_variable_and_unknown_keys_are_rejected() {
    let message = |toml_text: &str| -> String {
        match toml::from_str::<ProvidersConfig>(toml_text) {
            Err(err) => err.to_string(),
            Ok(config) => match Providers::from_config(&config, env) {
                Err(err) => {
                    assert!(matches!(err, Error::Config(_)), "{err:?}");
                    err.to_string()
                }
                Ok(_) => panic!("accepted: {toml_text}"),
            },
        }
    };
    let in_file = message("[providers.x]\nkind = \"openai\"\napi_key = \"sk-leak\"\n");
    assert!(in_file.contains("api_key_env"), "{in_file}");
    assert!(!in_file.contains("sk-leak"), "{in_file}");
    let missing = message("[providers.x]\nkind = \"openai\"\napi_key_env = \"NOPE\"\n");
    assert!(
        missing.contains("NOPE") && missing.contains("\"x\""),
        "{missing}"
    );
    let typo = message("[providers.x]\nkind = \"openai\"\nbase_ulr = \"http://h\"\n");
    assert!(typo.contains("base_ulr"), "{typo}");
    let kind = message("[providers.x]\nkind = \"gemini\"\n");
    assert!(kind.contains("gemini"), "{kind}");
    let default = message("default_provider = \"y\"\n[providers.x]\nkind = \"openai\"\n");
    assert!(default.contains("\"y\""), "{default}");
    let timeout = message("[providers.x]\nkind = \"openai\"\ntimeouts = { idle = -1 }\n");
    assert!(timeout.contains("timeouts.idle"), "{timeout}");
}

/// A provider that records the model names it is asked for.
#[derive(Default)]
struct Recorder(Mutex<Vec<String>>);

impl Provider for Recorder {
    fn stream(&self, request: ModelRequest) -> ProviderStream {
        self.0.lock().unwrap().push(request.model);
        let finish = Chunk::Finish(Finish {
            kind: FinishKind::Completed,
            usage: None,
            error: None,
        });
        Box::pin(futures_util::stream::iter([ProviderEvent::Chunk(finish)]))
    }
}

fn request(model: &str) -> ModelRequest {
    ModelRequest {
        model: model.to_owned(),
        messages: vec![Message::User {
            content: "hi".to_owned(),
        }],
        tools: vec![],
    }
}

#[tokio::test]
async fn the_registry_streams_to_the_routed_provider_with_the_model_part() {
    let (local, remote) = (Arc::new(Recorder::default()), Arc::new(Recorder::default()));
    let mut providers = Providers::new();
    providers.insert("local", local.clone(), None).unwrap();
    providers
        .insert("remote", remote.clone(), Some("big".to_owned()))
        .unwrap();
    assert!(providers.insert("bad/name", local.clone(), None).is_err());
    for model in ["qwen3:8b", "remote/small", "remote/", "local/x/y"] {
        providers.stream(request(model)).collect::<Vec<_>>().await;
    }
    let events: Vec<ProviderEvent> = providers.stream(request("")).collect().await;
    assert_eq!(
        (
            local.0.lock().unwrap().clone(),
            remote.0.lock().unwrap().clone()
        ),
        (
            vec!["qwen3:8b".to_owned(), "x/y".to_owned()],
            vec!["small".to_owned(), "big".to_owned()]
        )
    );
    let [ProviderEvent::Chunk(Chunk::Finish(finish))] = events.as_slice() else {
        panic!("{events:?}")
    };
    assert_eq!(finish.error.as_ref().unwrap().code, "provider_not_found");
}

#[tokio::test]
async fn extra_headers_and_the_key_from_the_environment_are_sent() {
    let body = sse(&[delta(json!({"content": "ok"}), Some("stop"))]);
    let (base_url, server) = serve(vec![ok_sse(&body)]).await;
    let mut config = ProvidersConfig::default();
    let mut local = agentd_provider::ProviderConfig::new(ProviderKind::Openai);
    local.base_url = Some(base_url);
    local.api_key_env = Some("TEST_DEEPSEEK_KEY".to_owned());
    local.headers = BTreeMap::from([("X-Title".to_owned(), "agentd tests".to_owned())]);
    config.providers.insert("local".to_owned(), local);
    let providers = Providers::from_config(&config, env).unwrap();
    providers
        .stream(request("local/m"))
        .collect::<Vec<_>>()
        .await;
    let captured = server.take(0);
    assert_eq!(
        (
            captured.header("x-title"),
            captured.header("authorization"),
            captured.json()["model"].clone()
        ),
        (Some("agentd tests"), Some("Bearer sk-ds"), json!("m"))
    );
    assert_eq!(format!("{}", Secret::new("sk-ds")), "[redacted]");
}
