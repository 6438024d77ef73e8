//! One chunk of a decoded-trace cache file: up to [`CHUNK_REQUESTS`] requests stored by column, a column
//! whose value is the same for every request of the chunk stored once (no time, reads only, one stream,
//! one client, one-block requests cost nothing per request), first blocks as 4 bytes while they fit.
//!
//! Layout (little-endian): `u32 payload_len, u32 crc32(payload), payload`, where the payload is
//! `u32 n, u8 shape` then the columns in the order first, len, time, op, stream, client; each is one
//! value (its bit in `shape` clear) or `n` values (bit set). `first` is `u32` values when shape bit
//! `FIRST_U32` is set, else `u64`.

use prefetchsim_core::{Op, Request};

/// Requests per chunk: 64 Ki (256 KiB to 2 MiB of payload).
pub const CHUNK_REQUESTS: usize = 1 << 16;

const FIRST_EACH: u8 = 1;
const FIRST_U32: u8 = 2;
const LEN_EACH: u8 = 4;
const TIME_EACH: u8 = 8;
const OP_EACH: u8 = 16;
const STREAM_EACH: u8 = 32;
const CLIENT_EACH: u8 = 64;

/// Bytes before a chunk's payload: its length and checksum.
pub const CHUNK_HEAD: usize = 8;

fn op_byte(op: Op) -> u8 {
    match op {
        Op::Read => 0,
        Op::Write => 1,
    }
}

fn op_of(byte: u8) -> Result<Op, String> {
    match byte {
        0 => Ok(Op::Read),
        1 => Ok(Op::Write),
        v => Err(format!("op byte {v}")),
    }
}

/// Append one column: a single value when every request agrees, else one per request.
fn column<T: PartialEq + Copy>(
    reqs: &[Request],
    get: impl Fn(&Request) -> T,
    put: impl Fn(&mut Vec<u8>, T),
    bit: u8,
    shape: &mut u8,
    out: &mut Vec<u8>,
) {
    let v0 = get(&reqs[0]);
    if reqs.iter().all(|r| get(r) == v0) {
        put(out, v0);
    } else {
        *shape |= bit;
        for r in reqs {
            put(out, get(r));
        }
    }
}

/// Encode `reqs` (1 to [`CHUNK_REQUESTS`]) as one chunk, appended to `out`.
pub fn encode(reqs: &[Request], out: &mut Vec<u8>) {
    debug_assert!(!reqs.is_empty() && reqs.len() <= CHUNK_REQUESTS);
    let start = out.len();
    out.extend_from_slice(&[0; CHUNK_HEAD]);
    let payload = out.len();
    out.extend_from_slice(&(reqs.len() as u32).to_le_bytes());
    let shape_at = out.len();
    out.push(0);
    let mut shape = 0u8;
    let first_fits = reqs.iter().all(|r| r.first <= u64::from(u32::MAX));
    if first_fits {
        shape |= FIRST_U32;
        column(reqs, |r| r.first as u32, |o, v| o.extend_from_slice(&v.to_le_bytes()), FIRST_EACH, &mut shape, out);
    } else {
        column(reqs, |r| r.first, |o, v| o.extend_from_slice(&v.to_le_bytes()), FIRST_EACH, &mut shape, out);
    }
    column(reqs, |r| r.len, |o, v| o.extend_from_slice(&v.to_le_bytes()), LEN_EACH, &mut shape, out);
    column(reqs, |r| r.time_ns, |o, v| o.extend_from_slice(&v.to_le_bytes()), TIME_EACH, &mut shape, out);
    column(reqs, |r| op_byte(r.op), |o, v| o.push(v), OP_EACH, &mut shape, out);
    column(reqs, |r| r.stream, |o, v| o.extend_from_slice(&v.to_le_bytes()), STREAM_EACH, &mut shape, out);
    column(reqs, |r| r.client, |o, v| o.extend_from_slice(&v.to_le_bytes()), CLIENT_EACH, &mut shape, out);
    out[shape_at] = shape;
    let len = (out.len() - payload) as u32;
    let crc = crc32fast::hash(&out[payload..]);
    out[start..start + 4].copy_from_slice(&len.to_le_bytes());
    out[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
}

/// A column being read: one value, or one per request starting at a byte offset.
#[derive(Clone, Copy)]
enum Col<T> {
    Same(T),
    Each(usize),
}

/// Reads little-endian values out of a payload, failing (not panicking) past its end.
struct Cursor<'a> {
    b: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], String> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.b.len()).ok_or("chunk shorter than its columns")?;
        let s = &self.b[self.at..end];
        self.at = end;
        Ok(s)
    }

    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().map_err(|_| "short")?))
    }

    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().map_err(|_| "short")?))
    }

    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }

    /// A column of `width`-byte values: its one value (read by `one`) or the offset of its `n` values.
    fn col<T>(
        &mut self,
        each: bool,
        n: usize,
        width: usize,
        one: impl Fn(&mut Self) -> Result<T, String>,
    ) -> Result<Col<T>, String> {
        if each {
            let at = self.at;
            self.take(n * width)?;
            Ok(Col::Each(at))
        } else {
            Ok(Col::Same(one(self)?))
        }
    }
}

#[inline]
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

#[inline]
fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3], b[at + 4], b[at + 5], b[at + 6], b[at + 7]])
}

/// Decode a chunk's payload (its checksum already verified), appending its requests to `out`. An
/// inconsistent payload is an error message (the file is then not trusted).
pub fn decode(payload: &[u8], out: &mut Vec<Request>) -> Result<usize, String> {
    let mut c = Cursor { b: payload, at: 0 };
    let n = c.u32()? as usize;
    if n == 0 || n > CHUNK_REQUESTS {
        return Err(format!("chunk of {n} requests"));
    }
    let shape = c.u8()?;
    let wide = shape & FIRST_U32 == 0;
    let first = c.col(shape & FIRST_EACH != 0, n, if wide { 8 } else { 4 }, |c| {
        if wide {
            c.u64()
        } else {
            c.u32().map(u64::from)
        }
    })?;
    let len = c.col(shape & LEN_EACH != 0, n, 4, Cursor::u32)?;
    let time = c.col(shape & TIME_EACH != 0, n, 8, Cursor::u64)?;
    let op = c.col(shape & OP_EACH != 0, n, 1, Cursor::u8)?;
    let stream = c.col(shape & STREAM_EACH != 0, n, 4, Cursor::u32)?;
    let client = c.col(shape & CLIENT_EACH != 0, n, 4, Cursor::u32)?;
    if c.at != payload.len() {
        return Err("chunk longer than its columns".into());
    }
    let b = payload;
    let get32 = |col: Col<u32>, i: usize| match col {
        Col::Same(v) => v,
        Col::Each(at) => u32_at(b, at + 4 * i),
    };
    out.reserve(n);
    // The common shape of block traces (only the first block varies) in a loop of its own.
    if let (Col::Each(at), Col::Same(len), Col::Same(time_ns), Col::Same(op), Col::Same(stream), Col::Same(client)) =
        (first, len, time, op, stream, client)
    {
        let op = op_of(op)?;
        if len == 0 {
            return Err("request of 0 blocks".into());
        }
        if wide {
            out.extend((0..n).map(|i| Request { time_ns, first: u64_at(b, at + 8 * i), len, op, stream, client }));
        } else {
            out.extend((0..n).map(|i| Request {
                time_ns,
                first: u64::from(u32_at(b, at + 4 * i)),
                len,
                op,
                stream,
                client,
            }));
        }
        return Ok(n);
    }
    for i in 0..n {
        let first = match first {
            Col::Same(v) => v,
            Col::Each(at) if wide => u64_at(b, at + 8 * i),
            Col::Each(at) => u64::from(u32_at(b, at + 4 * i)),
        };
        let op = match op {
            Col::Same(v) => v,
            Col::Each(at) => b[at + i],
        };
        let op = op_of(op)?;
        let len = get32(len, i);
        if len == 0 {
            return Err("request of 0 blocks".into());
        }
        let time_ns = match time {
            Col::Same(v) => v,
            Col::Each(at) => u64_at(b, at + 8 * i),
        };
        out.push(Request { time_ns, first, len, op, stream: get32(stream, i), client: get32(client, i) });
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(reqs: &[Request]) -> Vec<Request> {
        let mut bytes = Vec::new();
        encode(reqs, &mut bytes);
        let len = u32::from_le_bytes(bytes[0..4].try_into().unwrap()) as usize;
        assert_eq!(len + CHUNK_HEAD, bytes.len());
        let crc = u32::from_le_bytes(bytes[4..8].try_into().unwrap());
        assert_eq!(crc, crc32fast::hash(&bytes[CHUNK_HEAD..]));
        let mut out = Vec::new();
        assert_eq!(decode(&bytes[CHUNK_HEAD..], &mut out).unwrap(), reqs.len());
        out
    }

    #[test]
    fn every_shape_of_column_reads_back_as_written() {
        let plain: Vec<Request> = (0..100).map(|i| Request::read(i * 7, 1)).collect();
        assert_eq!(roundtrip(&plain), plain);
        let wide: Vec<Request> = (0..100).map(|i| Request::read(u64::MAX / 2 - i, 1)).collect();
        assert_eq!(roundtrip(&wide), wide);
        let mixed: Vec<Request> = (0..100u32)
            .map(|i| Request {
                time_ns: u64::from(i) * 1000,
                first: u64::from(i) << 33,
                len: i % 5 + 1,
                op: if i % 3 == 0 { Op::Write } else { Op::Read },
                stream: i % 4,
                client: i % 2,
            })
            .collect();
        assert_eq!(roundtrip(&mixed), mixed);
        let one = [Request { time_ns: 5, first: 9, len: 3, op: Op::Write, stream: 2, client: 1 }];
        assert_eq!(roundtrip(&one), one);
    }

    #[test]
    fn damaged_payloads_are_errors_not_panics() {
        let reqs: Vec<Request> = (0..10).map(|i| Request::read(i, 1)).collect();
        let mut bytes = Vec::new();
        encode(&reqs, &mut bytes);
        let payload = &bytes[CHUNK_HEAD..];
        for cut in 0..payload.len() {
            assert!(decode(&payload[..cut], &mut Vec::new()).is_err(), "cut at {cut}");
        }
        let mut longer = payload.to_vec();
        longer.push(0);
        assert!(decode(&longer, &mut Vec::new()).is_err());
    }
}
