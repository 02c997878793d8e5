//! The turn loop (DESIGN.md §1): ask the model, store and publish every chunk, run the tools
//! it calls, repeat until it answers without a tool call.

use std::sync::Arc;
use std::time::Instant;

use agentd_events::{
    Assembled, BlockAssembler, Chunk, DerivedMessages, ErrorInfo, EventData, FinishKind, Message,
    ToolCall, ToolResult, ToolStart, TurnEnd, TurnEndKind, Usage,
};
use agentd_provider::{ModelRequest, ProviderEvent};
use agentd_store::Session;
use agentd_tools::{ToolContext, ToolOutput};
use futures_util::{FutureExt, StreamExt};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::Inner;
use crate::control::TurnControl;
use crate::error::Result;

/// Most chunks stored in one transaction when the provider delivers a burst.
const MAX_BATCH: usize = 64;

/// Text of the result given to calls that never ran because the turn was stopped.
const SKIPPED: &str = "error: not executed: the turn was stopped before this call ran";

/// One running turn: what the loop needs, and the conversation so far.
pub(crate) struct TurnRun {
    pub(crate) inner: Arc<Inner>,
    pub(crate) session: Session,
    pub(crate) turn_id: Uuid,
    pub(crate) control: Arc<TurnControl>,
    /// The seq of this turn's `user/message`.
    pub(crate) first_seq: u64,
    /// This turn's `user/message`.
    pub(crate) user_message: EventData,
    /// The session's conversation, this turn's included, as model messages: taken from the
    /// engine's kept conversations or derived from the store when the turn starts, then
    /// grown as the turn appends, so no step re-reads the log or derives it again.
    pub(crate) conversation: DerivedMessages,
    pub(crate) usage: Usage,
}

impl TurnRun {
    /// Runs the turn to its end and stores its `turn/end`. Never panics; a store failure is
    /// logged (the turn is then closed as `interrupted` at the next start-up).
    pub(crate) async fn run(mut self) {
        let steps = self.steps().await;
        // After a failure `conversation` may lack events, so it is not kept for the next turn.
        let conversation_complete = steps.is_ok();
        let end = match steps {
            Ok(kind_and_error) => kind_and_error,
            Err(error) => {
                tracing::error!(session = %self.session.id, turn = %self.turn_id, %error, "turn failed");
                (
                    TurnEndKind::Error,
                    Some(ErrorInfo::new("internal_error", error.to_string())),
                )
            }
        };
        let (kind, error) = self.control.stopped_kind().map_or(end, |kind| (kind, None));
        let end = TurnEnd {
            kind,
            error,
            usage: self.usage,
        };
        match self
            .inner
            .store
            .end_turn(self.session.id, self.turn_id, &end)
            .await
        {
            Ok(event) => {
                if conversation_complete {
                    let conversation = std::mem::take(&mut self.conversation);
                    self.inner
                        .conversations
                        .put(self.session.id, event.seq, conversation);
                }
                self.inner.bus.publish(self.session.id, &[Arc::new(event)]);
            }
            Err(error) => {
                tracing::error!(session = %self.session.id, turn = %self.turn_id, %error, "could not end turn");
            }
        }
    }

    async fn steps(&mut self) -> Result<(TurnEndKind, Option<ErrorInfo>)> {
        let config = &self.inner.config;
        let max_steps = self.session.max_steps.unwrap_or(config.max_steps);
        let system = self
            .session
            .system
            .clone()
            .or_else(|| config.system_prompt.clone());
        let model = self
            .session
            .model
            .clone()
            .unwrap_or_else(|| config.model.clone());
        let tools = self.inner.tools.specs(self.session.tools.as_deref());
        let workspace = self.inner.workspaces.ensure(self.session.id).await?;
        self.conversation = self.load_conversation().await?;
        let cancel = self.control.token();
        for _ in 0..max_steps {
            let request = ModelRequest {
                model: model.clone(),
                messages: self.conversation.messages(system.as_deref()),
                tools: tools.clone(),
            };
            let Some(Assembled { message, finish }) = self.ask(request, &cancel).await? else {
                return Ok((TurnEndKind::Cancelled, None));
            };
            if let Some(usage) = &finish.usage {
                self.usage.add(usage);
            }
            let calls = match &message {
                Message::Assistant { tool_calls, .. } => tool_calls.clone(),
                _ => Vec::new(),
            };
            let end = match finish.kind {
                FinishKind::Error => Some((TurnEndKind::Error, finish.error)),
                FinishKind::MaxTokens => Some((TurnEndKind::MaxTokens, None)),
                FinishKind::Completed | FinishKind::ToolCalls if calls.is_empty() => {
                    Some((TurnEndKind::Completed, None))
                }
                FinishKind::Completed | FinishKind::ToolCalls => None,
            };
            let message = EventData::AssistantMessage { message };
            if let Some(end) = end {
                self.append(vec![message]).await?;
                return Ok(end);
            }
            self.run_tools(message, &calls, &workspace, &cancel).await?;
            if cancel.is_cancelled() {
                return Ok((TurnEndKind::Cancelled, None));
            }
        }
        Ok((TurnEndKind::MaxSteps, None))
    }

    /// The session's conversation through this turn's `user/message`: what its previous turn
    /// here left, when nothing was stored after that turn's `turn/end`; else derived from the
    /// store. A session's first turn has nothing before it.
    async fn load_conversation(&self) -> Result<DerivedMessages> {
        let before = self.first_seq.saturating_sub(1);
        let kept = if before == 0 {
            Some(DerivedMessages::default())
        } else {
            self.inner.conversations.take(self.session.id, before)
        };
        let Some(mut conversation) = kept else {
            let events = self.inner.store.load_conversation(self.session.id).await?;
            let mut conversation = DerivedMessages::default();
            for event in &events {
                conversation.push(&event.data);
            }
            return Ok(conversation);
        };
        conversation.push(&self.user_message);
        Ok(conversation)
    }

    /// Streams one model response into the log. `None` when the turn was stopped meanwhile
    /// (what streamed so far is stored as the assistant message).
    async fn ask(
        &mut self,
        request: ModelRequest,
        cancel: &CancellationToken,
    ) -> Result<Option<Assembled>> {
        let mut stream = self.inner.provider.stream(request);
        let mut assembler = BlockAssembler::new();
        loop {
            let item = tokio::select! {
                biased;
                () = cancel.cancelled() => {
                    drop(stream);
                    let partial = assembler.finish();
                    if has_content(&partial.message) {
                        self.append(vec![EventData::AssistantMessage { message: partial.message }]).await?;
                    }
                    return Ok(None);
                }
                item = stream.next() => item,
            };
            let Some(first) = item else { break };
            // Whatever else the provider has ready goes into the same transaction: one
            // commit per burst, not per chunk, and nothing waits for more to arrive.
            let mut batch = vec![first];
            let mut ended = false;
            while batch.len() < MAX_BATCH {
                match stream.next().now_or_never() {
                    Some(Some(item)) => batch.push(item),
                    Some(None) => {
                        ended = true;
                        break;
                    }
                    None => break,
                }
            }
            let mut data = Vec::with_capacity(batch.len());
            let mut finished = false;
            for item in batch {
                match item {
                    ProviderEvent::Chunk(chunk) => {
                        finished = matches!(chunk, Chunk::Finish(_));
                        assembler.push(&chunk);
                        data.push(EventData::AssistantChunk(chunk));
                    }
                    ProviderEvent::Retry(retry) => data.push(EventData::ProviderRetry(retry)),
                }
                if finished {
                    break;
                }
            }
            self.append(data).await?;
            if finished || ended {
                break;
            }
        }
        Ok(Some(assembler.finish()))
    }

    /// Stores `message` (the assistant message that made `calls`) and runs the calls in order.
    /// To save transactions, each append carries what happened since the previous one: the
    /// message with the first call's `tool/start`, then each call's `tool/result` with the
    /// next call's `tool/start`; the log's order is the same as one append per event. A call
    /// reached after the turn was stopped never starts; it gets a "not executed" result.
    async fn run_tools(
        &mut self,
        message: EventData,
        calls: &[ToolCall],
        workspace: &std::path::Path,
        cancel: &CancellationToken,
    ) -> Result<()> {
        let mut unstored = vec![message];
        for call in calls {
            let start = ToolStart {
                call_id: call.id.clone(),
                name: call.function.name.clone(),
                arguments: call.function.arguments.clone(),
            };
            if cancel.is_cancelled() {
                unstored.push(result_event(&start, ToolOutput::error(SKIPPED), 0));
                continue;
            }
            unstored.push(EventData::ToolStart(start.clone()));
            self.append(std::mem::take(&mut unstored)).await?;
            let started = Instant::now();
            let ctx = ToolContext {
                workspace: workspace.to_path_buf(),
                call_id: call.id.clone(),
                cancel: cancel.child_token(),
            };
            let output = self.call_tool(&start, &ctx).await;
            let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
            unstored.push(result_event(&start, output, duration_ms));
        }
        self.append(unstored).await
    }

    /// Runs one call; every failure is an error output the model reads.
    async fn call_tool(&self, start: &ToolStart, ctx: &ToolContext) -> ToolOutput {
        let enabled = self
            .session
            .tools
            .as_ref()
            .is_none_or(|names| names.contains(&start.name));
        let Some(tool) = self.inner.tools.get(&start.name).filter(|_| enabled) else {
            let offered: Vec<String> = self
                .inner
                .tools
                .specs(self.session.tools.as_deref())
                .into_iter()
                .map(|spec| spec.name)
                .collect();
            return ToolOutput::error(format!(
                "error: unknown tool {:?}; the tools are: {}",
                start.name,
                offered.join(", ")
            ));
        };
        let raw = start.arguments.trim();
        let arguments = if raw.is_empty() {
            serde_json::Value::Object(serde_json::Map::new())
        } else {
            match serde_json::from_str(raw) {
                Ok(value) => value,
                Err(error) => {
                    return ToolOutput::error(format!(
                        "error: arguments are not valid JSON: {error}; send one JSON object"
                    ));
                }
            }
        };
        tool.call(ctx, arguments).await
    }

    /// Stores events of this turn, publishes them, and adds them to the conversation.
    async fn append(&mut self, data: Vec<EventData>) -> Result<()> {
        let stored = self
            .inner
            .store
            .append(self.session.id, self.turn_id, &data)
            .await?;
        let stored: Vec<_> = stored.into_iter().map(Arc::new).collect();
        self.inner.bus.publish(self.session.id, &stored);
        for data in &data {
            self.conversation.push(data);
        }
        Ok(())
    }
}

fn result_event(start: &ToolStart, output: ToolOutput, duration_ms: u64) -> EventData {
    EventData::ToolResult(ToolResult {
        call_id: start.call_id.clone(),
        name: start.name.clone(),
        text: output.text,
        is_error: output.is_error,
        exit_code: output.exit_code,
        truncated: output.truncated,
        duration_ms,
    })
}

fn has_content(message: &Message) -> bool {
    match message {
        Message::Assistant {
            content,
            tool_calls,
            reasoning_content,
        } => !content.is_empty() || !tool_calls.is_empty() || reasoning_content.is_some(),
        _ => false,
    }
}
