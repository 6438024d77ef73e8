//! Buffered access to a decompressed trace stream: whole lines for text formats and fixed-size records for
//! binary ones, both straight out of one reusable buffer (no allocation per line or record).

use std::io::{BufRead, ErrorKind, Read};

use crate::error::{Location, TraceError};
use crate::record::{AddrUnit, RawRecord, RecordReader, VolumeKey};

/// Bytes requested from the decompressor per refill.
const CHUNK: usize = 256 * 1024;
/// The longest line accepted: anything longer is almost surely binary data read as text.
pub(crate) const MAX_LINE: usize = 1 << 20;

/// A refillable window over the input. `buf[pos..end]` holds the bytes not yet handed out.
struct Window {
    input: Box<dyn BufRead + Send>,
    buf: Vec<u8>,
    pos: usize,
    end: usize,
    eof: bool,
    /// Offset of `buf[0]` in the decompressed stream.
    base: u64,
}

impl Window {
    fn new(input: Box<dyn BufRead + Send>) -> Self {
        Self { input, buf: vec![0; CHUNK], pos: 0, end: 0, eof: false, base: 0 }
    }

    fn available(&self) -> &[u8] {
        &self.buf[self.pos..self.end]
    }

    /// Move the unread bytes to the front, grow the buffer if it is full, and read once more.
    /// Returns whether more bytes (or the end) were seen; `eof` is set at the end of the stream.
    fn refill(&mut self, max_len: usize) -> std::io::Result<bool> {
        if self.pos > 0 {
            self.buf.copy_within(self.pos..self.end, 0);
            self.end -= self.pos;
            self.base += self.pos as u64;
            self.pos = 0;
        }
        if self.end == self.buf.len() {
            if self.buf.len() >= max_len {
                return Ok(false);
            }
            let grown = (self.buf.len() * 2).min(max_len);
            self.buf.resize(grown, 0);
        }
        loop {
            match self.input.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(true);
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(true);
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

/// Lines of a text trace. Line terminators are `\n` or `\r\n`; the final line may lack one.
pub(crate) struct TextInput {
    win: Window,
    file: String,
    line: u64,
    /// Byte offset of the line last returned (or being read).
    line_offset: u64,
    /// A data line read past a bad blank line, handed out by the next call: (number, offset, range).
    pending: Option<(u64, u64, usize, usize)>,
    /// Inside a line too long to hold: drop bytes up to the next line break.
    discarding: bool,
}

/// Whether a line holds nothing but spaces and tabs.
fn is_blank(line: &[u8]) -> bool {
    line.iter().all(|&b| b == b' ' || b == b'\t')
}

impl TextInput {
    pub(crate) fn new(input: Box<dyn BufRead + Send>, file: &str) -> Self {
        Self {
            win: Window::new(input),
            file: file.to_string(),
            line: 0,
            line_offset: 0,
            pending: None,
            discarding: false,
        }
    }

    /// The byte offset of the line last returned by [`Self::next_data_line`].
    pub(crate) fn line_offset(&self) -> u64 {
        self.line_offset
    }

    /// Where line `start..end` begins once a UTF-8 byte-order mark at the very start of the file is
    /// skipped: spreadsheet exports write one, and a field holding it read as "'0' is not a number" with
    /// the mark invisible.
    fn after_bom(&self, start: usize, end: usize) -> usize {
        let first = self.line == 1 && self.win.base + start as u64 == 0;
        if first && self.win.buf[start..end].starts_with(&[0xEF, 0xBB, 0xBF]) {
            start + 3
        } else {
            start
        }
    }

    /// The byte range of the next line in the buffer (terminator stripped), or `None` at the end.
    fn next_range(&mut self) -> Result<Option<(usize, usize)>, TraceError> {
        loop {
            let avail = self.win.available();
            if self.discarding {
                // The rest of an overlong line (already reported): skip it, keep what follows.
                match memchr::memchr(b'\n', avail) {
                    Some(i) => {
                        self.win.pos += i + 1;
                        self.discarding = false;
                    }
                    None if self.win.eof => {
                        self.win.pos = self.win.end;
                        self.discarding = false;
                        return Ok(None);
                    }
                    None => {
                        self.win.pos = self.win.end;
                        self.win.refill(MAX_LINE).map_err(|e| TraceError::io(&self.file, e))?;
                    }
                }
                continue;
            }
            if let Some(i) = memchr::memchr(b'\n', avail) {
                let start = self.win.pos;
                self.win.pos += i + 1;
                self.line += 1;
                self.line_offset = self.win.base + start as u64;
                let mut end = start + i;
                if end > start && self.win.buf[end - 1] == b'\r' {
                    end -= 1;
                }
                return Ok(Some((self.after_bom(start, end), end)));
            }
            if self.win.eof {
                if avail.is_empty() {
                    return Ok(None);
                }
                let (start, mut end) = (self.win.pos, self.win.end);
                self.win.pos = end;
                self.line += 1;
                self.line_offset = self.win.base + start as u64;
                if self.win.buf[end - 1] == b'\r' {
                    end -= 1;
                }
                return Ok(Some((self.after_bom(start, end), end)));
            }
            let progressed = self.win.refill(MAX_LINE).map_err(|e| TraceError::io(&self.file, e))?;
            if !progressed {
                // Report the line once and drop it: reading can go on at the next line break.
                self.line += 1;
                self.line_offset = self.win.base + self.win.pos as u64;
                self.win.pos = self.win.end;
                self.discarding = true;
                return Err(TraceError::malformed(
                    &self.file,
                    Location::Line { line: self.line, offset: self.line_offset },
                    "line",
                    format!("longer than {MAX_LINE} bytes without a line break (binary data read as text?)"),
                ));
            }
        }
    }

    /// The next line that holds data, with its 1-based number, or `None` at the end.
    ///
    /// Blank lines (empty or only spaces/tabs) are skipped only at the end of the file, where editors
    /// and converters leave them; a blank line followed by more data is an error, since it means a
    /// damaged or concatenated file. The data line after it is kept for the next call, so that a reader
    /// that skips bad records loses only the blank run.
    pub(crate) fn next_data_line(&mut self) -> Result<Option<(u64, &[u8])>, TraceError> {
        if let Some((n, offset, s, e)) = self.pending.take() {
            self.line_offset = offset;
            return Ok(Some((n, &self.win.buf[s..e])));
        }
        let mut first_blank = None;
        loop {
            let Some((s, e)) = self.next_range()? else { return Ok(None) };
            if is_blank(&self.win.buf[s..e]) {
                first_blank.get_or_insert((self.line, self.line_offset));
                continue;
            }
            if let Some((line, offset)) = first_blank {
                self.pending = Some((self.line, self.line_offset, s, e));
                return Err(TraceError::malformed(
                    &self.file,
                    Location::Line { line, offset },
                    "line",
                    "blank line inside the trace (only trailing blank lines are skipped)",
                ));
            }
            return Ok(Some((self.line, &self.win.buf[s..e])));
        }
    }
}

/// Fixed-size records of a binary trace.
pub(crate) struct BinInput {
    win: Window,
    file: String,
    /// Index of the next record.
    next: u64,
}

impl BinInput {
    pub(crate) fn new(input: Box<dyn BufRead + Send>, file: &str) -> Self {
        Self { win: Window::new(input), file: file.to_string(), next: 0 }
    }

    /// Make at least `n` bytes (n ≤ the chunk size) available unless the stream ends first; returns them.
    pub(crate) fn peek(&mut self, n: usize) -> Result<&[u8], TraceError> {
        while self.win.end - self.win.pos < n && !self.win.eof {
            self.win.refill(CHUNK).map_err(|e| TraceError::io(&self.file, e))?;
        }
        Ok(self.win.available())
    }

    /// The location of record `index` of `size` bytes.
    pub(crate) fn location(index: u64, size: usize) -> Location {
        Location::Record { index, offset: index.saturating_mul(size as u64) }
    }

    /// The next `N`-byte record with its index, borrowed from the buffer, or `None` at a clean end. A
    /// stream that ends inside a record is a [`TraceError::Truncated`].
    #[inline]
    pub(crate) fn next<const N: usize>(&mut self) -> Result<Option<(u64, &[u8; N])>, TraceError> {
        if self.win.end - self.win.pos < N {
            let got = self.peek(N)?.len();
            if got == 0 {
                return Ok(None);
            }
            if got < N {
                return Err(self.truncated(got, N));
            }
        }
        let start = self.win.pos;
        self.win.pos += N;
        let index = self.next;
        self.next += 1;
        Ok(self.win.buf[start..start + N].first_chunk::<N>().map(|r| (index, r)))
    }

    #[cold]
    fn truncated(&self, got: usize, want: usize) -> TraceError {
        TraceError::Truncated { file: self.file.clone(), location: Self::location(self.next, want), got, want }
    }
}

/// The per-line decoder of a text format.
pub(crate) trait LineParser: Send {
    /// The record on line `line_no` of `file`, or `None` for a line that carries none (a header, a marker).
    fn parse(&mut self, file: &str, line_no: u64, line: &[u8]) -> Result<Option<RawRecord>, TraceError>;
    /// What `addr` counts.
    fn addr_unit(&self) -> AddrUnit;
    /// See [`RecordReader::addr_size_fields`].
    fn addr_size_fields(&self) -> (&str, &str);
    /// See [`RecordReader::volume_key`].
    fn volume_key(&self) -> VolumeKey {
        VolumeKey::None
    }
    /// See [`RecordReader::volume_field`].
    fn volume_field(&self) -> &str {
        "volume"
    }
    /// See [`RecordReader::byte_sizes`].
    fn byte_sizes(&self) -> bool {
        true
    }
    /// See [`RecordReader::stream_ids`]: every format says, no default.
    fn stream_ids(&self) -> bool;
}

/// Line offsets remembered for [`RecordReader::locate`]: more than the records of one batch of
/// [`TraceSource`](crate::TraceSource), which locates errors only within the batch it is converting.
const RECENT: usize = 8192;

/// A text trace reader: lines from a [`TextInput`], records from a [`LineParser`].
pub(crate) struct TextReader<P> {
    input: TextInput,
    file: String,
    parser: P,
    /// `(line, byte offset)` of recent records, at `line % RECENT`.
    recent: Vec<(u64, u64)>,
}

impl<P: LineParser> TextReader<P> {
    pub(crate) fn new(input: Box<dyn BufRead + Send>, file: &str, parser: P) -> Self {
        Self { input: TextInput::new(input, file), file: file.to_string(), parser, recent: vec![(0, 0); RECENT] }
    }

    /// As a boxed [`RecordReader`].
    pub(crate) fn boxed(input: Box<dyn BufRead + Send>, file: &str, parser: P) -> Box<dyn RecordReader>
    where
        P: 'static,
    {
        Box::new(Self::new(input, file, parser))
    }
}

impl<P: LineParser> RecordReader for TextReader<P> {
    fn locate(&self, pos: u64) -> Location {
        let (line, offset) = self.recent[(pos % RECENT as u64) as usize];
        // Always found for records of the batch being converted; an older record keeps its line only.
        Location::Line { line: pos, offset: if line == pos { offset } else { 0 } }
    }

    fn next_record(&mut self) -> Result<Option<RawRecord>, TraceError> {
        loop {
            let Some((n, line)) = self.input.next_data_line()? else { return Ok(None) };
            match self.parser.parse(&self.file, n, line) {
                Ok(Some(mut r)) => {
                    r.pos = n;
                    self.recent[(n % RECENT as u64) as usize] = (n, self.input.line_offset());
                    return Ok(Some(r));
                }
                Ok(None) => {}
                Err(e) => return Err(e.at_line_offset(n, self.input.line_offset())),
            }
        }
    }

    fn addr_unit(&self) -> AddrUnit {
        self.parser.addr_unit()
    }

    fn addr_size_fields(&self) -> (&str, &str) {
        self.parser.addr_size_fields()
    }

    fn volume_key(&self) -> VolumeKey {
        self.parser.volume_key()
    }

    fn volume_field(&self) -> &str {
        self.parser.volume_field()
    }

    fn byte_sizes(&self) -> bool {
        self.parser.byte_sizes()
    }

    fn stream_ids(&self) -> bool {
        self.parser.stream_ids()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(data: &'static [u8]) -> TextInput {
        TextInput::new(Box::new(data), "t")
    }

    #[test]
    fn lines_drop_crlf_and_keep_an_unterminated_last_line() {
        let mut t = text(b"a\r\nb\nc");
        let mut got = Vec::new();
        while let Some((n, l)) = t.next_data_line().unwrap() {
            got.push((n, l.to_vec()));
        }
        assert_eq!(got, vec![(1, b"a".to_vec()), (2, b"b".to_vec()), (3, b"c".to_vec())]);
    }

    /// A UTF-8 byte-order mark is dropped at the start of the file only, with or without a line break.
    #[test]
    fn a_byte_order_mark_at_the_start_is_dropped() {
        for (data, first) in [(&b"\xEF\xBB\xBF1\n\xEF\xBB\xBF2\n"[..], &b"1"[..]), (&b"\xEF\xBB\xBF7"[..], &b"7"[..])] {
            let mut t = TextInput::new(Box::new(data), "t");
            assert_eq!(t.next_data_line().unwrap().unwrap().1, first);
            if data.len() > 5 {
                assert_eq!(t.next_data_line().unwrap().unwrap().1, b"\xEF\xBB\xBF2", "kept inside the file");
            }
        }
    }

    #[test]
    fn trailing_blank_lines_are_skipped_but_inner_ones_are_errors() {
        let mut t = text(b"1\n2\n\n \n");
        assert_eq!(t.next_data_line().unwrap().map(|x| x.0), Some(1));
        assert_eq!(t.next_data_line().unwrap().map(|x| x.0), Some(2));
        assert!(t.next_data_line().unwrap().is_none());
        let mut t = text(b"1\n\n2\n");
        t.next_data_line().unwrap();
        let e = t.next_data_line().unwrap_err();
        assert!(matches!(e, TraceError::Malformed { location: Location::Line { line: 2, offset: 2 }, .. }), "{e}");
        // The data line after the blank run is not lost.
        assert_eq!(t.next_data_line().unwrap().map(|x| x.0), Some(3));
    }

    #[test]
    fn lines_longer_than_a_chunk_are_assembled() {
        let long: &'static [u8] = Box::leak(format!("{}\nx\n", "7".repeat(CHUNK + 10)).into_bytes().into_boxed_slice());
        let mut t = text(long);
        assert_eq!(t.next_data_line().unwrap().unwrap().1.len(), CHUNK + 10);
        assert_eq!(t.next_data_line().unwrap().unwrap().1, b"x");
    }

    #[test]
    fn a_record_cut_short_is_truncated() {
        let mut b = BinInput::new(Box::new(&[1u8, 2, 3, 4, 5, 6][..]), "b");
        assert_eq!(b.next::<4>().unwrap(), Some((0, &[1, 2, 3, 4])));
        let e = b.next::<4>().unwrap_err();
        assert!(matches!(e, TraceError::Truncated { got: 2, want: 4, .. }), "{e}");
    }
}
