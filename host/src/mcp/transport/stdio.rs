//! The stdio transport: one JSON-RPC message per line on stdin and stdout.
//!
//! runbox reads the lines itself rather than through rmcp's reader so that every line is
//! screened (`mcp/intake`) before it is parsed into values: a line too long, too wide or
//! too deep, or one whose parse the server's memory budget cannot hold now, is answered
//! with a JSON-RPC error and never parsed. Lines are parsed one at a time, in order.
//! stdout carries nothing but protocol messages, each written whole.
//!
//! When stdin ends, the client has said all it will (`printf '…' | runbox mcp` ends it
//! at once): every request read is still answered, each reply a whole line, and then the
//! server ends. When the client stops reading (stdout's reader closed: it went away),
//! every run still under way is cancelled at once.

use std::collections::HashSet;
use std::sync::Arc;

use anyhow::{Context as _, Result};
use bytes::{Bytes, BytesMut};
use futures::StreamExt as _;
use rmcp::model::{ClientNotification, ErrorData, JsonRpcMessage, RequestId};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::{RoleServer, ServiceExt};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, Mutex, Notify};
use tokio_util::codec::{AnyDelimiterCodec, AnyDelimiterCodecError, Decoder, FramedRead};
use tokio_util::sync::CancellationToken;

use crate::mcp::handler::server::RunboxServer;
use crate::mcp::intake::{Intake, Refusal, MAX_MESSAGE_BYTES};

/// The writer every message goes out through, a whole line at a time.
type Out<W> = Arc<Mutex<W>>;

/// Serves one client on stdin/stdout.
pub async fn serve_stdio(server: RunboxServer, intake: Intake) -> Result<()> {
    let gone = CancellationToken::new();
    watch_stdout_reader(gone.clone());
    serve_until(
        server,
        intake,
        tokio::io::stdin(),
        tokio::io::stdout(),
        gone,
    )
    .await
}

/// Cancels `gone` when the reader of stdout goes away (a pipe's read end closed, a
/// terminal hung up): a client that stopped reading can be answered no more. On a thread
/// of its own, blocked in `poll` until then; the process does not wait for it.
fn watch_stdout_reader(gone: CancellationToken) {
    let watch = move || loop {
        let stdout = std::io::stdout();
        let mut fds = [rustix::event::PollFd::new(
            &stdout,
            rustix::event::PollFlags::empty(),
        )];
        match rustix::event::poll(&mut fds, None) {
            Ok(_) => {
                let seen = fds[0].revents();
                if seen.intersects(rustix::event::PollFlags::ERR | rustix::event::PollFlags::HUP) {
                    tracing::debug!("stdout's reader went away: the client is gone");
                    gone.cancel();
                    return;
                }
            }
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => {
                tracing::debug!("cannot watch stdout: {e}");
                return;
            }
        }
    };
    let _ = std::thread::Builder::new()
        .name("runbox-stdout-watch".into())
        .spawn(watch);
}

/// Serves one client reading `input` and writing `output`.
pub async fn serve<R, W>(server: RunboxServer, intake: Intake, input: R, output: W) -> Result<()>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    serve_until(server, intake, input, output, CancellationToken::new()).await
}

/// [`serve`], until the client is `gone` (which cancels every run under way).
async fn serve_until<R, W>(
    server: RunboxServer,
    intake: Intake,
    input: R,
    output: W,
    gone: CancellationToken,
) -> Result<()>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let out: Out<W> = Arc::new(Mutex::new(output));
    let unanswered = Arc::new(Unanswered::default());
    let (messages, received) = mpsc::channel::<RxJsonRpcMessage<RoleServer>>(16);
    tokio::spawn(read_messages(
        input,
        intake,
        messages,
        out.clone(),
        unanswered.clone(),
        gone.clone(),
    ));
    let sink = Box::pin(futures::sink::unfold(
        (out, unanswered, gone.clone()),
        |(out, unanswered, gone), message: TxJsonRpcMessage<RoleServer>| async move {
            let line = serde_json::to_vec(&message).map_err(std::io::Error::other)?;
            if let Err(e) = write_line(&out, &line).await {
                // Nobody reads what is written: the client is gone.
                gone.cancel();
                return Err(e);
            }
            if let Some(id) = reply_id(&message) {
                unanswered.answered(id);
            }
            Ok::<_, std::io::Error>((out, unanswered, gone))
        },
    ));
    let stream = Box::pin(futures::stream::unfold(received, |mut received| async {
        received.recv().await.map(|m| (m, received))
    }));
    let running = server
        .serve_with_ct((sink, stream), gone)
        .await
        .context("MCP session over stdio did not start")?;
    running.waiting().await?;
    Ok(())
}

/// The requests read and not answered yet: at the end of input they are waited for.
#[derive(Default)]
struct Unanswered {
    ids: std::sync::Mutex<HashSet<RequestId>>,
    changed: Notify,
}

impl Unanswered {
    fn asked(&self, id: RequestId) {
        self.ids
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id);
    }

    /// A reply went out for `id` (or the client cancelled it, and none will).
    fn answered(&self, id: &RequestId) {
        let removed = self
            .ids
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(id);
        if removed {
            self.changed.notify_waiters();
        }
    }

    /// Waits until every request read has its reply.
    async fn all_answered(&self) {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let left = self.ids.lock().unwrap_or_else(|e| e.into_inner()).len();
            if left == 0 {
                return;
            }
            tracing::debug!(left, "input ended: answering the requests read");
            changed.await;
        }
    }
}

/// The request a message answers, if it is a reply.
fn reply_id(message: &TxJsonRpcMessage<RoleServer>) -> Option<&RequestId> {
    match message {
        JsonRpcMessage::Response(r) => Some(&r.id),
        JsonRpcMessage::Error(e) => e.id.as_ref(),
        _ => None,
    }
}

/// Writes `line` and a newline, whole, and flushes.
async fn write_line<W: AsyncWrite + Unpin>(out: &Mutex<W>, line: &[u8]) -> std::io::Result<()> {
    let mut out = out.lock().await;
    out.write_all(line).await?;
    out.write_all(b"\n").await?;
    out.flush().await
}

/// Reads `input` line by line, screens and parses each, and hands the messages on;
/// refusals are answered on `out`. At the end of input (or a read error) it waits until
/// every request read is answered (or the client is `gone`), then ends the messages: the
/// server then ends too.
async fn read_messages<R, W>(
    input: R,
    intake: Intake,
    messages: mpsc::Sender<RxJsonRpcMessage<RoleServer>>,
    out: Out<W>,
    unanswered: Arc<Unanswered>,
    gone: CancellationToken,
) where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut lines = lines(input);
    while let Some(line) = lines.next().await {
        let line = match line {
            Ok(line) => line,
            Err(e) => {
                tracing::debug!("cannot read stdin: {e}");
                break;
            }
        };
        let (message, screened) = match &line {
            Line::TooLong => (
                &[][..],
                Err(Refusal::TooLarge {
                    bytes: MAX_MESSAGE_BYTES + 1,
                }),
            ),
            Line::Whole(line) => {
                let message = line.strip_suffix(b"\r").unwrap_or(line);
                let message = message.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(message);
                if message.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                (message, intake.screen(message))
            }
        };
        let reply = match screened {
            Err(refusal) => {
                tracing::warn!("refused a message before parsing it: {refusal}");
                Some(refusal.answer(message))
            }
            Ok(_parse) => match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(message) {
                Ok(parsed) => {
                    match &parsed {
                        JsonRpcMessage::Request(request) => unanswered.asked(request.id.clone()),
                        JsonRpcMessage::Notification(n) => {
                            if let ClientNotification::CancelledNotification(c) = &n.notification {
                                if let Some(id) = &c.params.request_id {
                                    unanswered.answered(id);
                                }
                            }
                        }
                        _ => {}
                    }
                    if messages.send(parsed).await.is_err() {
                        break;
                    }
                    None
                }
                // Not JSON: there is no id to answer, and answering garbage can start an
                // error storm (what rmcp and the other SDKs do too).
                Err(e) if e.is_syntax() || e.is_eof() => {
                    tracing::debug!("ignoring a line that is not JSON: {e}");
                    None
                }
                // JSON, but not a JSON-RPC message runbox knows.
                Err(e) => Some(
                    serde_json::to_value(TxJsonRpcMessage::<RoleServer>::error(
                        ErrorData::invalid_request(format!("invalid request: {e}"), None),
                        None,
                    ))
                    .expect("errors serialize"),
                ),
            },
        };
        if let Some(reply) = reply {
            let reply = serde_json::to_vec(&reply).expect("errors serialize");
            if write_line(&out, &reply).await.is_err() {
                gone.cancel();
                break;
            }
        }
    }
    tokio::select! {
        _ = unanswered.all_answered() => {}
        _ = gone.cancelled() => {}
    }
    drop(messages);
}

/// One line of input, without its newline.
#[derive(Debug, PartialEq, Eq)]
enum Line {
    Whole(Bytes),
    /// A line longer than [`MAX_MESSAGE_BYTES`]: told as soon as it passes that size; the
    /// codec then drops the rest of it as it comes, holding none of it.
    TooLong,
}

/// The lines of `input`, each at most [`MAX_MESSAGE_BYTES`] long (a last line without its
/// newline is still a line).
fn lines<R: AsyncRead>(input: R) -> FramedRead<R, LineCodec> {
    FramedRead::new(
        input,
        LineCodec(AnyDelimiterCodec::new_with_max_length(
            b"\n".to_vec(),
            b"\n".to_vec(),
            MAX_MESSAGE_BYTES,
        )),
    )
}

/// tokio-util's delimiter codec on bytes (a line need not be UTF-8 to be answered),
/// with a line over the size limit as an item rather than an error, which would end
/// the stream.
struct LineCodec(AnyDelimiterCodec);

impl LineCodec {
    fn lift(
        decoded: Result<Option<Bytes>, AnyDelimiterCodecError>,
    ) -> std::io::Result<Option<Line>> {
        match decoded {
            Ok(line) => Ok(line.map(Line::Whole)),
            Err(AnyDelimiterCodecError::MaxChunkLengthExceeded) => Ok(Some(Line::TooLong)),
            Err(AnyDelimiterCodecError::Io(e)) => Err(e),
        }
    }
}

impl Decoder for LineCodec {
    type Item = Line;
    type Error = std::io::Error;

    fn decode(&mut self, buf: &mut BytesMut) -> std::io::Result<Option<Line>> {
        Self::lift(self.0.decode(buf))
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> std::io::Result<Option<Line>> {
        Self::lift(self.0.decode_eof(buf))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn lines_are_read_whole_and_long_ones_dropped() {
        let text = format!("a\n{}\nb", "x".repeat(MAX_MESSAGE_BYTES + 10));
        let mut lines = lines(text.as_bytes());
        let a = lines.next().await.transpose().unwrap();
        assert_eq!(a, Some(Line::Whole(Bytes::from_static(b"a"))));
        let long = lines.next().await.transpose().unwrap();
        assert_eq!(long, Some(Line::TooLong));
        let b = lines.next().await.transpose().unwrap();
        assert_eq!(b, Some(Line::Whole(Bytes::from_static(b"b"))));
        assert!(lines.next().await.is_none());
    }

    #[tokio::test]
    async fn a_line_that_never_ends_is_refused_without_being_held() {
        // Endless input with no newline: refused once it passes the limit, and the
        // reader's buffer stays near the limit while the rest streams past.
        let (mut client, server_side) = tokio::io::duplex(1 << 16);
        let writer = tokio::spawn(async move {
            let chunk = vec![b'x'; 1 << 20];
            for _ in 0..((3 * MAX_MESSAGE_BYTES) >> 20) {
                if client.write_all(&chunk).await.is_err() {
                    return;
                }
            }
            client.write_all(b"\n{}\n").await.unwrap();
        });
        let mut lines = lines(server_side);
        assert_eq!(lines.next().await.transpose().unwrap(), Some(Line::TooLong));
        assert!(lines.read_buffer().capacity() <= 2 * MAX_MESSAGE_BYTES);
        let after = lines.next().await.transpose().unwrap();
        assert!(lines.read_buffer().capacity() <= 2 * MAX_MESSAGE_BYTES);
        assert_eq!(after, Some(Line::Whole(Bytes::from_static(b"{}"))));
        writer.await.unwrap();
    }

    #[tokio::test]
    async fn refusals_are_answered_and_the_end_of_input_waits_for_the_answers() {
        let (mut client, server_side) = tokio::io::duplex(1 << 20);
        let (mut from_server, to_client) = tokio::io::duplex(1 << 20);
        let intake = Intake::new(crate::service::MemoryBudget::new(1 << 30));
        let (messages, mut received) = mpsc::channel(4);
        let unanswered = Arc::new(Unanswered::default());
        let reader = tokio::spawn(read_messages(
            server_side,
            intake,
            messages,
            Arc::new(Mutex::new(to_client)),
            unanswered.clone(),
            CancellationToken::new(),
        ));
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":3,"method":"x","params":{}}}"#,
            "[".repeat(100) + &"]".repeat(100)
        );
        client
            .write_all(
                format!("{deep}\nnot json\n{{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\"}}\n")
                    .as_bytes(),
            )
            .await
            .unwrap();
        drop(client);
        let ping = received.recv().await.expect("the ping is handed on");
        assert!(serde_json::to_string(&ping).unwrap().contains("\"ping\""));
        // The input ended, but the ping is not answered yet: the messages go on.
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        assert!(!reader.is_finished(), "ended before the ping was answered");
        unanswered.answered(&RequestId::Number(4));
        reader.await.unwrap();
        assert!(received.recv().await.is_none(), "then the messages end");
        let mut answered = String::new();
        from_server.read_to_string(&mut answered).await.unwrap();
        let answers: Vec<serde_json::Value> = answered
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(answers.len(), 1, "{answered}");
        assert_eq!(answers[0]["id"], 3);
        assert!(
            answers[0]["error"]["message"]
                .as_str()
                .unwrap()
                .contains("deep"),
            "{answered}"
        );
    }
}
