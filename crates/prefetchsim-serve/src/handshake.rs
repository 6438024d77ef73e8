//! The fixed newstyle handshake: greeting, client flags, then option haggling until `NBD_OPT_GO` or
//! `NBD_OPT_EXPORT_NAME` enters transmission. `NBD_OPT_INFO` describes the export, `NBD_OPT_LIST` names it
//! (the default export, ""), `NBD_OPT_ABORT` ends the session, any other option gets `NBD_REP_ERR_UNSUP`.
//! The server has one export; every export name reaches it (names are not checked, not even against the
//! protocol's 4096-byte limit on strings, which binds the client). Option data longer than
//! [`MAX_OPTION_LEN`] is skipped unread and answered with an error, not a reason to close.

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The error message of an `NBD_OPT_LIST` with data.
const LIST_TAKES_NO_DATA: &[u8] = b"NBD_OPT_LIST takes no data";

use crate::protocol::*;

/// How the negotiation ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Negotiated {
    /// Enter transmission.
    Go,
    /// The client aborted or left (or broke the protocol): close the connection.
    Closed,
}

/// Transmission flags of the export.
#[must_use]
pub fn transmission_flags() -> u16 {
    TFLAG_HAS_FLAGS | TFLAG_SEND_FLUSH | TFLAG_SEND_FUA | TFLAG_SEND_TRIM | TFLAG_SEND_CACHE | TFLAG_CAN_MULTI_CONN
}

/// The `NBD_INFO_EXPORT` payload: type, size, transmission flags.
fn info_export(size: u64) -> Vec<u8> {
    let mut d = INFO_EXPORT.to_be_bytes().to_vec();
    d.extend_from_slice(&size.to_be_bytes());
    d.extend_from_slice(&transmission_flags().to_be_bytes());
    d
}

/// The `NBD_INFO_BLOCK_SIZE` payload: any alignment works (minimum 1), the preferred size is the cache
/// block `block`, at most [`MAX_REQUEST_LEN`] per request. The protocol wants the preferred size a power
/// of two and at least 512 (libnbd drops the whole reply otherwise), so a cache block that is not a
/// power of two is advertised as the largest one below it, and one under 512 as 512.
fn info_block_size(block: u32) -> Vec<u8> {
    let preferred = if block == 0 { 1 } else { 1u32 << (31 - block.leading_zeros()) }.max(512);
    let mut d = INFO_BLOCK_SIZE.to_be_bytes().to_vec();
    d.extend_from_slice(&1u32.to_be_bytes());
    d.extend_from_slice(&preferred.to_be_bytes());
    d.extend_from_slice(&MAX_REQUEST_LEN.to_be_bytes());
    d
}

/// Negotiate on `s` for an export of `size` bytes whose cache blocks are `block` bytes. `shutting_down`
/// answers options with `NBD_REP_ERR_SHUTDOWN`. I/O errors (the client left) end it as
/// [`Negotiated::Closed`].
pub async fn negotiate<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
    size: u64,
    block: u32,
    shutting_down: impl Fn() -> bool,
) -> std::io::Result<Negotiated> {
    let mut hello = NBD_MAGIC.to_be_bytes().to_vec();
    hello.extend_from_slice(&IHAVEOPT.to_be_bytes());
    hello.extend_from_slice(&(FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES).to_be_bytes());
    s.write_all(&hello).await?;
    let client_flags = s.read_u32().await?;
    if client_flags & !(FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES) != 0 {
        // Flags we do not know: the document says the server must close.
        return Ok(Negotiated::Closed);
    }
    let no_zeroes = client_flags & FLAG_C_NO_ZEROES != 0;
    loop {
        let magic = s.read_u64().await?;
        let option = s.read_u32().await?;
        let len = s.read_u32().await?;
        if magic != IHAVEOPT {
            return Ok(Negotiated::Closed);
        }
        if len > MAX_OPTION_LEN {
            // More than the server buffers: skipped by its length (as the protocol means the length to be
            // used), held nowhere, and answered, so negotiation goes on. An option the server does not know
            // gets NBD_REP_ERR_UNSUP whatever its length; INFO and GO NBD_REP_ERR_TOO_BIG; LIST (which takes
            // no data) NBD_REP_ERR_INVALID. ABORT ignores its data. NBD_OPT_EXPORT_NAME cannot be answered
            // with an error: the session ends.
            if option == OPT_EXPORT_NAME {
                return Ok(Negotiated::Closed);
            }
            tokio::io::copy(&mut (&mut *s).take(u64::from(len)), &mut tokio::io::sink()).await?;
            let reply = match option {
                OPT_ABORT => {
                    let _ = s.write_all(&option_reply(option, REP_ACK, &[])).await;
                    return Ok(Negotiated::Closed);
                }
                OPT_INFO | OPT_GO => option_reply(option, REP_ERR_TOO_BIG, b"option data too long"),
                OPT_LIST => option_reply(option, REP_ERR_INVALID, LIST_TAKES_NO_DATA),
                _ => option_reply(option, REP_ERR_UNSUP, b"option not supported"),
            };
            s.write_all(&reply).await?;
            continue;
        }
        let mut data = vec![0u8; len as usize];
        s.read_exact(&mut data).await?;
        if shutting_down() && option != OPT_ABORT {
            s.write_all(&option_reply(option, REP_ERR_SHUTDOWN, b"the server is shutting down")).await?;
            continue;
        }
        match option {
            // The one export, under the default export's name (every name reaches it).
            OPT_LIST if data.is_empty() => {
                let mut out = option_reply(option, REP_SERVER, &0u32.to_be_bytes());
                out.extend(option_reply(option, REP_ACK, &[]));
                s.write_all(&out).await?;
            }
            OPT_LIST => s.write_all(&option_reply(option, REP_ERR_INVALID, LIST_TAKES_NO_DATA)).await?,
            OPT_EXPORT_NAME => {
                let mut d = size.to_be_bytes().to_vec();
                d.extend_from_slice(&transmission_flags().to_be_bytes());
                if !no_zeroes {
                    d.extend_from_slice(&[0u8; 124]);
                }
                s.write_all(&d).await?;
                return Ok(Negotiated::Go);
            }
            OPT_ABORT => {
                // The client closes next; a reply it may not read is still polite.
                let _ = s.write_all(&option_reply(option, REP_ACK, &[])).await;
                return Ok(Negotiated::Closed);
            }
            OPT_INFO | OPT_GO => {
                let Some((_name, infos)) = parse_info_request(&data) else {
                    s.write_all(&option_reply(option, REP_ERR_INVALID, b"malformed NBD_OPT_INFO/GO data")).await?;
                    continue;
                };
                let mut out = option_reply(option, REP_INFO, &info_export(size));
                if infos.contains(&INFO_BLOCK_SIZE) {
                    out.extend(option_reply(option, REP_INFO, &info_block_size(block)));
                }
                out.extend(option_reply(option, REP_ACK, &[]));
                s.write_all(&out).await?;
                if option == OPT_GO {
                    return Ok(Negotiated::Go);
                }
            }
            _ => s.write_all(&option_reply(option, REP_ERR_UNSUP, b"option not supported")).await?,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::info_block_size;

    /// The preferred size (bytes 6..10 of the payload) is a power of two at most the cache block, and at
    /// least 512 as the protocol requires (libnbd dropped the whole reply for a preferred size of 1 or 256).
    #[test]
    fn the_preferred_block_size_is_a_power_of_two() {
        let preferred = |block| u32::from_be_bytes(info_block_size(block)[6..10].try_into().unwrap());
        assert_eq!([1, 256, 512, 1000, 4096, 6144, 1 << 25].map(preferred), [512, 512, 512, 512, 4096, 4096, 1 << 25]);
    }
}
