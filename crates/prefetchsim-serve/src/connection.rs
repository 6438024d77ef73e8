//! One client connection: the handshake, then the transmission phase. Requests are read in order and each
//! is served by a task of its own, so a slow read does not hold up the requests behind it; replies (simple
//! replies) go out in completion order under the handle the client chose.
//!
//! Malformed input never reaches the cache: a bad request magic or an oversized write closes the
//! connection (the stream cannot be resynchronised), a read or write past the end, an oversized read or an
//! unknown command gets an error reply and the connection goes on. A client that disconnects in the middle
//! of a request only ends its own connection.
//!
//! A connection holds at most `MAX_IN_FLIGHT` (128) requests and [`MAX_IN_FLIGHT_BYTES`] of their data (reads'
//! replies, writes' payloads) in service; past either it reads no more requests until some are answered,
//! so a client that sends reads and does not read the replies cannot make the server hold more.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, WriteHalf};
use tokio::sync::{watch, Mutex, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;

use crate::cache::Cache;
use crate::handshake::{negotiate, Negotiated};
use crate::protocol::*;

/// Requests of one connection in service at once; the connection reads no more until one finishes.
const MAX_IN_FLIGHT: usize = 128;

/// Bytes of request data (a read's reply, a write's payload) one connection holds in service at once:
/// twice the largest request, so one always fits. The count of requests alone let 128 reads of 32 MiB
/// whose replies the client did not read hold 4 GiB per connection.
pub const MAX_IN_FLIGHT_BYTES: u32 = 2 * MAX_REQUEST_LEN;

type Writer<S> = Arc<Mutex<WriteHalf<S>>>;

async fn reply<S: AsyncWrite>(w: &Writer<S>, error: u32, handle: u64, data: Option<&[u8]>) {
    let mut w = w.lock().await;
    // A client gone away is noticed by the reading side.
    if w.write_all(&simple_reply(error, handle)).await.is_ok() {
        if let Some(d) = data {
            let _ = w.write_all(d).await;
        }
    }
}

/// Whether `offset .. offset + length` lies within an export of `size` bytes.
fn within(offset: u64, length: u32, size: u64) -> bool {
    offset.checked_add(u64::from(length)).is_some_and(|end| end <= size)
}

/// The command flags the server accepts: FUA, on every command. The server advertises
/// `NBD_FLAG_SEND_FUA`, and the protocol then says it MUST accept every command with FUA set (even by
/// ignoring it: a read, a trim or a cache writes nothing, a flush syncs anyway); clients are known to set
/// it on reads. No other flag is advertised.
const VALID_FLAGS: u16 = CMD_FLAG_FUA;

/// `bytes` of `budget`, or `None` if the server stops first.
async fn reserve(
    budget: &Arc<Semaphore>,
    bytes: u32,
    shutdown: &mut watch::Receiver<bool>,
) -> Option<OwnedSemaphorePermit> {
    tokio::select! {
        // A request read once the stop began is not served (nor are those behind it).
        biased;
        _ = shutdown.wait_for(|s| *s) => None,
        p = Arc::clone(budget).acquire_many_owned(bytes) => p.ok(),
    }
}

/// Serve a connection on `stream` until the client disconnects, breaks the protocol, does not finish its
/// handshake within `handshake_timeout`, or `shutdown` turns true (then the requests in service finish
/// first). `clients` counts the connections that completed the
/// handshake, and this one's client id is its number among them: a connection that only probes whether
/// the socket is live (a second server) is no client and takes no id.
pub async fn serve<S>(
    stream: S,
    cache: Arc<Cache>,
    block: u32,
    clients: Arc<AtomicU32>,
    mut shutdown: watch::Receiver<bool>,
    handshake_timeout: std::time::Duration,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let mut stream = stream;
    let down = shutdown.clone();
    let size = cache.size();
    let negotiated = tokio::select! {
        r = negotiate(&mut stream, size, block, move || *down.borrow()) => r,
        // A client still negotiating when the server stops, or past the handshake's deadline, is dropped.
        _ = shutdown.wait_for(|s| *s) => return,
        () = tokio::time::sleep(handshake_timeout) => return,
    };
    let client = match negotiated {
        Ok(Negotiated::Go) => clients.fetch_add(1, Ordering::Relaxed),
        Ok(Negotiated::Closed) | Err(_) => return,
    };
    let (mut rd, wr) = tokio::io::split(stream);
    let wr: Writer<S> = Arc::new(Mutex::new(wr));
    let mut tasks = JoinSet::new();
    let budget = Arc::new(Semaphore::new(MAX_IN_FLIGHT_BYTES as usize));
    loop {
        while tasks.len() >= MAX_IN_FLIGHT {
            tasks.join_next().await;
        }
        // Reap finished tasks without waiting.
        while tasks.try_join_next().is_some() {}
        let mut head = [0u8; REQUEST_HEADER_LEN];
        tokio::select! {
            r = rd.read_exact(&mut head) => if r.is_err() { break },
            _ = shutdown.wait_for(|s| *s) => break,
        }
        let h = RequestHeader::decode(&head);
        if h.magic != REQUEST_MAGIC {
            break;
        }
        // A flag the server did not advertise (anything but FUA) is refused, not ignored: a client relying
        // on it (DF, a flag of a later protocol version) would otherwise take the reply for what it asked.
        // A write's data is still read, so the stream stays in step. DISC has no reply: it ends the
        // connection whatever its flags.
        let bad_flags = h.flags & !VALID_FLAGS != 0;
        if bad_flags && h.cmd != CMD_WRITE && h.cmd != CMD_DISC {
            reply(&wr, EINVAL, h.handle, None).await;
            continue;
        }
        match h.cmd {
            CMD_READ => {
                if h.length > MAX_REQUEST_LEN || !within(h.offset, h.length, size) {
                    reply(&wr, EINVAL, h.handle, None).await;
                } else if h.length == 0 {
                    reply(&wr, 0, h.handle, Some(&[])).await;
                } else {
                    // Unanswered at a stop, as a request not yet read would be.
                    let Some(permit) = reserve(&budget, h.length, &mut shutdown).await else { break };
                    let (c, w) = (Arc::clone(&cache), Arc::clone(&wr));
                    tasks.spawn(async move {
                        match c.read(client, h.offset, h.length).await {
                            Ok(data) => reply(&w, 0, h.handle, Some(&data)).await,
                            Err(e) => reply(&w, e, h.handle, None).await,
                        }
                        drop(permit);
                    });
                }
            }
            CMD_WRITE => {
                if h.length > MAX_REQUEST_LEN {
                    // Its data cannot be skipped safely: refuse and close.
                    reply(&wr, EINVAL, h.handle, None).await;
                    break;
                }
                let Some(permit) = reserve(&budget, h.length, &mut shutdown).await else { break };
                let mut data = vec![0u8; h.length as usize];
                tokio::select! {
                    r = rd.read_exact(&mut data) => if r.is_err() { break },
                    // A write whose data never comes is not acknowledged.
                    _ = shutdown.wait_for(|s| *s) => break,
                }
                if bad_flags {
                    reply(&wr, EINVAL, h.handle, None).await;
                } else if !within(h.offset, h.length, size) {
                    reply(&wr, ENOSPC, h.handle, None).await;
                } else if h.length == 0 {
                    reply(&wr, 0, h.handle, None).await;
                } else {
                    let (c, w) = (Arc::clone(&cache), Arc::clone(&wr));
                    let fua = h.flags & CMD_FLAG_FUA != 0;
                    tasks.spawn(async move {
                        let r = c.write(client, h.offset, data, fua).await;
                        reply(&w, r.err().unwrap_or(0), h.handle, None).await;
                        drop(permit);
                    });
                }
            }
            CMD_FLUSH => {
                let (c, w) = (Arc::clone(&cache), Arc::clone(&wr));
                tasks.spawn(async move {
                    let r = c.flush().await;
                    reply(&w, r.err().unwrap_or(0), h.handle, None).await;
                });
            }
            // TRIM is advisory (the data stays as it was); CACHE is a hint the levels' own prefetching
            // supersedes. Both acknowledge a valid range.
            CMD_TRIM | CMD_CACHE => {
                let e = if within(h.offset, h.length, size) { 0 } else { EINVAL };
                reply(&wr, e, h.handle, None).await;
            }
            CMD_DISC => break,
            _ => reply(&wr, EINVAL, h.handle, None).await,
        }
    }
    while tasks.join_next().await.is_some() {}
    cache.client_closed(client);
    let _ = wr.lock().await.shutdown().await;
}
