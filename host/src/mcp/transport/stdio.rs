//! The stdio transport: one JSON-RPC message per line on stdin and stdout.
//!
//! runbox reads the lines itself rather than through rmcp's reader so that every line is
//! screened (`mcp/intake`) before it is parsed into values: a line too long, too wide or
//! too deep, or one whose parse the server's memory budget cannot hold now, is answered
//! with a JSON-RPC error and never parsed. Lines are parsed one at a time, in order.
//! stdout carries nothing but protocol messages, each written whole.
//!
//! When stdin ends the client is gone: every run still under way is cancelled at once
//! (rmcp would otherwise let handlers finish for a few seconds before cancelling them).

use std::sync::Arc;

use anyhow::{Context as _, Result};
use bytes::{Bytes, BytesMut};
use futures::StreamExt as _;
use rmcp::model::ErrorData;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::{RoleServer, ServiceExt};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, Mutex};
use tokio_util::codec::{AnyDelimiterCodec, AnyDelimiterCodecError, Decoder, FramedRead};
use tokio_util::sync::CancellationToken;

use crate::mcp::handler::server::RunboxServer;
use crate::mcp::intake::{Intake, Refusal, MAX_MESSAGE_BYTES};

/// The writer every message goes out through, a whole line at a time.
type Out<W> = Arc<Mutex<W>>;

/// Serves one client on stdin/stdout.
pub async fn serve_stdio(server: RunboxServer, intake: Intake) -> Result<()> {
    serve(server, intake, tokio::io::stdin(), tokio::io::stdout()).await
}

/// Serves one client reading `input` and writing `output`.
pub async fn serve<R, W>(server: RunboxServer, intake: Intake, input: R, output: W) -> Result<()>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let closed = CancellationToken::new();
    let out: Out<W> = Arc::new(Mutex::new(output));
    let (messages, received) = mpsc::channel::<RxJsonRpcMessage<RoleServer>>(16);
    tokio::spawn(read_messages(
        input,
        intake,
        messages,
        out.clone(),
        closed.clone(),
    ));
    let sink = Box::pin(futures::sink::unfold(
        out,
        |out, message: TxJsonRpcMessage<RoleServer>| async move {
            let line = serde_json::to_vec(&message).map_err(std::io::Error::other)?;
            write_line(&out, &line).await?;
            Ok::<_, std::io::Error>(out)
        },
    ));
    let stream = Box::pin(futures::stream::unfold(received, |mut received| async {
        received.recv().await.map(|m| (m, received))
    }));
    let running = server
        .serve_with_ct((sink, stream), closed)
        .await
        .context("MCP session over stdio did not start")?;
    running.waiting().await?;
    Ok(())
}

/// Writes `line` and a newline, whole, and flushes.
async fn write_line<W: AsyncWrite + Unpin>(out: &Mutex<W>, line: &[u8]) -> std::io::Result<()> {
    let mut out = out.lock().await;
    out.write_all(line).await?;
    out.write_all(b"\n").await?;
    out.flush().await
}

/// Reads `input` line by line, screens and parses each, and hands the messages on;
/// refusals are answered on `out`. At the end of input (or a read error) `closed` is
/// cancelled: the client is gone.
async fn read_messages<R, W>(
    input: R,
    intake: Intake,
    messages: mpsc::Sender<RxJsonRpcMessage<RoleServer>>,
    out: Out<W>,
    closed: CancellationToken,
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
                break;
            }
        }
    }
    closed.cancel();
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
    async fn refusals_are_answered_and_the_end_of_input_closes() {
        let (mut client, server_side) = tokio::io::duplex(1 << 20);
        let (mut from_server, to_client) = tokio::io::duplex(1 << 20);
        let intake = Intake::new(crate::service::MemoryBudget::new(1 << 30));
        let (messages, mut received) = mpsc::channel(4);
        let closed = CancellationToken::new();
        let reader = tokio::spawn(read_messages(
            server_side,
            intake,
            messages,
            Arc::new(Mutex::new(to_client)),
            closed.clone(),
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
        reader.await.unwrap();
        assert!(closed.is_cancelled());
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
