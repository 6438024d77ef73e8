//! The NBD wire format: magic numbers, option, command, reply and flag values, and the fixed-size
//! messages of the fixed newstyle handshake and the transmission phase. Written from the NBD protocol
//! document (`doc/proto.md` of the NetworkBlockDevice project); everything is big-endian.

/// `NBDMAGIC`, the first 8 bytes the server sends.
pub const NBD_MAGIC: u64 = 0x4e42_444d_4147_4943;
/// `IHAVEOPT`: the newstyle magic, and the prefix of every option request.
pub const IHAVEOPT: u64 = 0x4948_4156_454F_5054;
/// Magic of option replies.
pub const OPT_REPLY_MAGIC: u64 = 0x0003_e889_0455_65a9;
/// Magic of a transmission request.
pub const REQUEST_MAGIC: u32 = 0x2560_9513;
/// Magic of a simple reply.
pub const SIMPLE_REPLY_MAGIC: u32 = 0x6744_6698;

/// Handshake flag: the server speaks fixed newstyle.
pub const FLAG_FIXED_NEWSTYLE: u16 = 1 << 0;
/// Handshake flag: the server omits the 124 zero bytes after `NBD_OPT_EXPORT_NAME` if asked.
pub const FLAG_NO_ZEROES: u16 = 1 << 1;
/// Client flag: fixed newstyle.
pub const FLAG_C_FIXED_NEWSTYLE: u32 = 1 << 0;
/// Client flag: no zeroes.
pub const FLAG_C_NO_ZEROES: u32 = 1 << 1;

/// Transmission flag: the flags field is valid.
pub const TFLAG_HAS_FLAGS: u16 = 1 << 0;
/// Transmission flag: `NBD_CMD_FLUSH` is supported.
pub const TFLAG_SEND_FLUSH: u16 = 1 << 2;
/// Transmission flag: `NBD_CMD_FLAG_FUA` is supported.
pub const TFLAG_SEND_FUA: u16 = 1 << 3;
/// Transmission flag: `NBD_CMD_TRIM` is supported.
pub const TFLAG_SEND_TRIM: u16 = 1 << 5;
/// Transmission flag: several connections see one consistent export (flush on one covers all).
pub const TFLAG_CAN_MULTI_CONN: u16 = 1 << 8;
/// Transmission flag: `NBD_CMD_CACHE` is supported.
pub const TFLAG_SEND_CACHE: u16 = 1 << 10;

/// Option: enter transmission with an export name (no error possible).
pub const OPT_EXPORT_NAME: u32 = 1;
/// Option: end the negotiation.
pub const OPT_ABORT: u32 = 2;
/// Option: list the exports.
pub const OPT_LIST: u32 = 3;
/// Option: describe an export without entering transmission.
pub const OPT_INFO: u32 = 6;
/// Option: describe an export and enter transmission.
pub const OPT_GO: u32 = 7;

/// Option reply: done.
pub const REP_ACK: u32 = 1;
/// Option reply: one export (in reply to `NBD_OPT_LIST`).
pub const REP_SERVER: u32 = 2;
/// Option reply: one piece of information about the export.
pub const REP_INFO: u32 = 3;
/// Option reply error: unknown option.
pub const REP_ERR_UNSUP: u32 = (1 << 31) + 1;
/// Option reply error: malformed option data.
pub const REP_ERR_INVALID: u32 = (1 << 31) + 3;
/// Option reply error: the server is shutting down.
pub const REP_ERR_SHUTDOWN: u32 = (1 << 31) + 7;
/// Option reply error: the request (or its reply) is too large to process.
pub const REP_ERR_TOO_BIG: u32 = (1 << 31) + 9;

/// Information type: size and transmission flags.
pub const INFO_EXPORT: u16 = 0;
/// Information type: block size constraints.
pub const INFO_BLOCK_SIZE: u16 = 3;

/// Command: read.
pub const CMD_READ: u16 = 0;
/// Command: write (the data follows the request).
pub const CMD_WRITE: u16 = 1;
/// Command: disconnect.
pub const CMD_DISC: u16 = 2;
/// Command: flush to stable storage.
pub const CMD_FLUSH: u16 = 3;
/// Command: the client no longer needs the range.
pub const CMD_TRIM: u16 = 4;
/// Command: a hint to bring the range into the server's cache.
pub const CMD_CACHE: u16 = 5;

/// Command flag: force unit access (the write is durable before the reply).
pub const CMD_FLAG_FUA: u16 = 1 << 0;

/// Error: I/O error.
pub const EIO: u32 = 5;
/// Error: not enough memory.
pub const ENOMEM: u32 = 12;
/// Error: invalid argument (unknown command, read past the end, oversized length).
pub const EINVAL: u32 = 22;
/// Error: no space (write past the end).
pub const ENOSPC: u32 = 28;
/// Error: the server is shutting down.
pub const ESHUTDOWN: u32 = 108;

/// The NBD error for a write the backing file refused: `ENOSPC` for a full file system, a quota or a file
/// size limit (the protocol maps `EDQUOT` and `EFBIG` to it), else `EIO`.
#[must_use]
pub fn write_errno(e: &std::io::Error) -> u32 {
    match e.raw_os_error() {
        Some(libc::ENOSPC | libc::EDQUOT | libc::EFBIG) => ENOSPC,
        _ => EIO,
    }
}

/// Longest option data the server reads into memory (export names are at most 4096 bytes); longer data is
/// skipped and answered with an error (`NBD_REP_ERR_TOO_BIG`, or `NBD_REP_ERR_UNSUP` for an unknown option).
pub const MAX_OPTION_LEN: u32 = 64 * 1024;
/// Longest read or write the server accepts (the protocol document's common maximum, 32 MiB).
pub const MAX_REQUEST_LEN: u32 = 32 << 20;

/// A transmission request header (28 bytes on the wire).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestHeader {
    /// Magic, [`REQUEST_MAGIC`] when well formed.
    pub magic: u32,
    /// Command flags.
    pub flags: u16,
    /// Command type.
    pub cmd: u16,
    /// The client's handle (cookie), echoed in the reply.
    pub handle: u64,
    /// Byte offset.
    pub offset: u64,
    /// Byte length.
    pub length: u32,
}

/// Size of [`RequestHeader`] on the wire.
pub const REQUEST_HEADER_LEN: usize = 28;

impl RequestHeader {
    /// Decode the 28 bytes of a request header.
    #[must_use]
    pub fn decode(b: &[u8; REQUEST_HEADER_LEN]) -> Self {
        let u16_at = |i: usize| u16::from_be_bytes([b[i], b[i + 1]]);
        let u32_at = |i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let u64_at = |i: usize| (u64::from(u32_at(i)) << 32) | u64::from(u32_at(i + 4));
        Self {
            magic: u32_at(0),
            flags: u16_at(4),
            cmd: u16_at(6),
            handle: u64_at(8),
            offset: u64_at(16),
            length: u32_at(24),
        }
    }

    /// Encode (clients in tests).
    #[must_use]
    pub fn encode(&self) -> [u8; REQUEST_HEADER_LEN] {
        let mut b = [0u8; REQUEST_HEADER_LEN];
        b[0..4].copy_from_slice(&self.magic.to_be_bytes());
        b[4..6].copy_from_slice(&self.flags.to_be_bytes());
        b[6..8].copy_from_slice(&self.cmd.to_be_bytes());
        b[8..16].copy_from_slice(&self.handle.to_be_bytes());
        b[16..24].copy_from_slice(&self.offset.to_be_bytes());
        b[24..28].copy_from_slice(&self.length.to_be_bytes());
        b
    }
}

/// A simple reply header (16 bytes): magic, error, handle.
#[must_use]
pub fn simple_reply(error: u32, handle: u64) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[0..4].copy_from_slice(&SIMPLE_REPLY_MAGIC.to_be_bytes());
    b[4..8].copy_from_slice(&error.to_be_bytes());
    b[8..16].copy_from_slice(&handle.to_be_bytes());
    b
}

/// An option reply: header (magic, option, type, length) and data.
#[must_use]
pub fn option_reply(option: u32, kind: u32, data: &[u8]) -> Vec<u8> {
    let mut b = Vec::with_capacity(20 + data.len());
    b.extend_from_slice(&OPT_REPLY_MAGIC.to_be_bytes());
    b.extend_from_slice(&option.to_be_bytes());
    b.extend_from_slice(&kind.to_be_bytes());
    b.extend_from_slice(&(data.len() as u32).to_be_bytes());
    b.extend_from_slice(data);
    b
}

/// The data of `NBD_OPT_INFO` / `NBD_OPT_GO`: the export name and the information types asked for.
/// `None` when the lengths inside do not add up to the option's length.
#[must_use]
pub fn parse_info_request(data: &[u8]) -> Option<(Vec<u8>, Vec<u16>)> {
    let name_len = u32::from_be_bytes(data.get(0..4)?.try_into().ok()?) as usize;
    let name = data.get(4..4usize.checked_add(name_len)?)?.to_vec();
    let rest = &data[4 + name_len..];
    let n = u16::from_be_bytes(rest.get(0..2)?.try_into().ok()?) as usize;
    let items = rest.get(2..)?;
    if items.len() != 2 * n {
        return None;
    }
    Some((name, items.chunks_exact(2).map(|c| u16::from_be_bytes([c[0], c[1]])).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_header_round_trips() {
        let h =
            RequestHeader { magic: REQUEST_MAGIC, flags: 1, cmd: CMD_WRITE, handle: 7, offset: 1 << 40, length: 4096 };
        assert_eq!(RequestHeader::decode(&h.encode()), h);
    }

    #[test]
    fn info_request_lengths_are_checked() {
        let mut d = 3u32.to_be_bytes().to_vec();
        d.extend_from_slice(b"abc");
        d.extend_from_slice(&1u16.to_be_bytes());
        d.extend_from_slice(&INFO_BLOCK_SIZE.to_be_bytes());
        assert_eq!(parse_info_request(&d), Some((b"abc".to_vec(), vec![INFO_BLOCK_SIZE])));
        assert_eq!(parse_info_request(&d[..d.len() - 1]), None);
        assert_eq!(parse_info_request(&[0, 0, 0, 9, b'a']), None);
        assert_eq!(parse_info_request(&[0xff, 0xff, 0xff, 0xff]), None);
    }
}
