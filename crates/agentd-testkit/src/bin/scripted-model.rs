//! `scripted-model`: the benchmark's OpenAI-compatible model as a process of its own.
//!
//! `scripted-model --addr 127.0.0.1:0 --script bench` serves `POST /v1/chat/completions` with
//! a [`Workload`] answer, at once and without reading more of the request than it must, and
//! prints its bound address (`127.0.0.1:PORT`) as the first line on stdout. A request whose
//! `model` names a script (`bench`, `stream300`) gets that script; others get `--script`.
//! Stops on SIGTERM or Ctrl-C.

use std::convert::Infallible;
use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;

use agentd_testkit::{Script, Workload};
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderValue, header};
use axum::response::Response;
use axum::routing::post;
use axum::serve::ListenerExt;
use clap::Parser;

/// An instant, scripted OpenAI-compatible model for agentd's benchmark.
#[derive(Debug, Parser)]
#[command(about)]
struct Args {
    /// Address to listen on; port 0 picks a free one.
    #[arg(long, default_value = "127.0.0.1:0")]
    addr: SocketAddr,
    /// Script for requests whose `model` names none: `bench` (a `bash echo hi` call, then 20
    /// text chunks) or `stream300` (300 text chunks).
    #[arg(long, default_value = "bench", value_parser = parse_script)]
    script: Script,
}

fn parse_script(name: &str) -> Result<Script, String> {
    Script::from_name(name).ok_or_else(|| format!("unknown script {name:?}: bench or stream300"))
}

// One thread: the model is idle most of the time and shares the cores with the server.
#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let args = Args::parse();
    let workload = Arc::new(Workload::new(args.script));
    let app = Router::new()
        .route("/v1/chat/completions", post(complete))
        .layer(DefaultBodyLimit::disable())
        .with_state(workload);
    let listener = tokio::net::TcpListener::bind(args.addr).await?;
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{}", listener.local_addr()?)?;
    stdout.flush()?;
    drop(stdout);
    // Small frames must leave at once, as agentd's own sockets do.
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, app)
        .with_graceful_shutdown(stop_signal())
        .await
}

async fn complete(State(workload): State<Arc<Workload>>, body: Bytes) -> Response {
    let frames = workload.answer(&body).map(Ok::<_, Infallible>);
    let mut response = Response::new(Body::from_stream(tokio_stream::iter(frames)));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    response
}

async fn stop_signal() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = terminate => {}
    }
}
