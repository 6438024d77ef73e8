//! What to read and how to turn it into block requests: [`TraceSpec`], and the [`TraceSource`] that
//! streams a trace file (or a generator) as core [`Request`]s.

use prefetchsim_core::engine::{RequestSource, SourceError, SourceReport};
use prefetchsim_core::{Op, Request};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::clients::{ClientFrom, MemberSpace, Merged, StreamAsClient};
pub use crate::convert::{Blame, Converter, MAX_REQUEST_BLOCKS};
use crate::error::TraceError;
use crate::record::{AddrUnit, RawRecord, RecordReader};
use crate::volumes::{VolumeSpace, Volumes, MAX_VOLUMES};
use crate::{compress, detect, formats, synth};

/// How records become cache requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// A request covering bytes `[o, o+s)` touches blocks `o/B … (o+s-1)/B`.
    #[default]
    Blocks,
    /// Each request is one cache object named by its start address in the trace's own unit
    /// (libCacheSim's convention, for parity with it).
    Objects,
}

/// Which operations to keep.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OpsFilter {
    /// Reads and writes (libCacheSim's default: every request is an access).
    #[default]
    All,
    /// Reads only.
    Reads,
    /// Writes only.
    Writes,
}

fn default_block_size() -> u64 {
    4096
}
fn default_sector_size() -> u64 {
    512
}

/// A trace to open: a file (with format, conversion and filter options) or a synthetic generator.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceSpec {
    /// File path; for `format = "synthetic"`, the generator name; for a `merge`, a label (may be empty).
    #[serde(default)]
    pub path: String,
    /// Format name; `None` or `"auto"` detects it from the name and content.
    #[serde(default)]
    pub format: Option<String>,
    /// Cache block size in bytes (default 4096).
    #[serde(default = "default_block_size")]
    pub block_size: u64,
    /// Sector size of sector-addressed formats (default 512).
    #[serde(default = "default_sector_size")]
    pub sector_size: u64,
    /// `blocks` (default) or `objects`.
    #[serde(default)]
    pub mode: Mode,
    /// `all` (default), `reads` or `writes`.
    #[serde(default)]
    pub ops: OpsFilter,
    /// Format or generator parameters: the generic CSV column spec (`obj-id-col`, `time-col`, …),
    /// the `multi-real` layout options, the generator's parameters.
    #[serde(default)]
    pub params: Map<String, Value>,
    /// Bad records to skip (and count) before a bad record is an error; 0 (default) is strict. See
    /// [`TraceSource`] for what can be skipped.
    #[serde(default)]
    pub skip_bad: u64,
    /// `stream` (aliases `asu`, `volume`, `lun`): the request's client id is its stream field, so a trace
    /// of several ASUs or volumes feeds one cache per client. Default `trace`: the format's client field.
    #[serde(default, skip_serializing_if = "ClientFrom::is_default")]
    pub client_from: ClientFrom,
    /// Several traces as one, member `i`'s requests as client `i` ([`crate::clients::Merged`]: by time
    /// when every member has timestamps, else round-robin). Each member is a trace table of its own; a
    /// key it leaves out among `block_size`, `sector_size`, `mode`, `ops`, `skip_bad` and `id_bytes` is this
    /// spec's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merge: Vec<Map<String, Value>>,
    /// For a `merge`: `shared` (default), the members address one set of blocks (clients sharing data);
    /// `separate`, each member is its own address space, as a volume ([`crate::clients::MemberSpace`]).
    #[serde(default, skip_serializing_if = "MemberSpace::is_default")]
    pub member_space: MemberSpace,
    /// Bytes one id stands for in id-addressed formats (LIRS, the w106 block array, oracleGeneral, CSV
    /// object ids) in `blocks` mode: id `i` starts at byte `i·id_bytes` and the request covers the
    /// record's own size from there (oracleGeneral's `obj_size`, the CSV size column), or `id_bytes` where
    /// the format has no size (LIRS, u32 arrays) or it is 0; split into `block_size` blocks like any
    /// address (so 4 KiB LIRS ids read with 64 KiB blocks group 16 ids). Unset (default): one id = one
    /// block of one request, whatever the block size and the record's size; so `id_bytes = block_size`
    /// differs from unset on formats with sizes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id_bytes: Option<u64>,
    /// `id_bytes` came from the merge, not the member: a member whose format has no ids ignores it, where
    /// an `id_bytes` set on a trace without ids is an error (it would do nothing).
    #[serde(skip)]
    pub id_bytes_inherited: bool,
    /// `separate` (default): each volume (LUN, device, ASU, disk of a host) of a multi-volume trace is its
    /// own address space, its blocks numbered from `index · 2^44` ([`crate::volumes`]); `shared`: one
    /// space, the same address in two volumes one block.
    #[serde(default, skip_serializing_if = "Volumes::is_default")]
    pub volumes: Volumes,
    /// Read and write the decoded-trace cache ([`crate::cache`]; default true). `false` always decodes
    /// the trace file itself.
    #[serde(default = "default_cache", skip_serializing_if = "is_true")]
    pub cache: bool,
}

/// An option error of merge member `key` (`trace.merge[i]`), renamed from the member's own `trace.KEY`.
fn in_member(key: &str, e: TraceError) -> TraceError {
    match e {
        TraceError::Option { key: k, message } if k.starts_with("trace.") || k == "trace" => {
            TraceError::Option { key: k.replacen("trace", key, 1), message }
        }
        e => e,
    }
}

fn default_cache() -> bool {
    true
}

#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_true(b: &bool) -> bool {
    *b
}

impl TraceSpec {
    /// A spec for `path` with every default (format detected).
    pub fn new(path: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            format: None,
            block_size: default_block_size(),
            sector_size: default_sector_size(),
            mode: Mode::Blocks,
            ops: OpsFilter::All,
            params: Map::new(),
            skip_bad: 0,
            client_from: ClientFrom::Trace,
            merge: Vec::new(),
            member_space: MemberSpace::Shared,
            id_bytes: None,
            id_bytes_inherited: false,
            volumes: Volumes::Separate,
            cache: true,
        }
    }

    /// A spec merging `members` as clients 0..n-1 (their block size must be this spec's, 4096 unless
    /// changed).
    #[must_use]
    pub fn merged(label: impl Into<String>, members: &[TraceSpec]) -> Self {
        let merge = members
            .iter()
            .map(|m| match serde_json::to_value(m) {
                Ok(Value::Object(o)) => o,
                _ => Map::new(),
            })
            .collect();
        Self { merge, ..Self::new(label) }
    }

    /// Merge member `i`, with the keys it inherits from this spec, checked.
    pub fn member(&self, i: usize) -> Result<TraceSpec, TraceError> {
        let key = format!("trace.merge[{i}]");
        let mut m = self.merge.get(i).cloned().ok_or_else(|| TraceError::option(&key, "no such member"))?;
        // The keys a member inherits, and only those: serialising the whole spec, members included, for
        // each member made opening a merge of n traces cost n^2 (2,000 traces took 7.6 s to open).
        let mut inherited = serde_json::json!({
            "block_size": self.block_size,
            "sector_size": self.sector_size,
            "mode": self.mode,
            "ops": self.ops,
            "skip_bad": self.skip_bad,
            "volumes": self.volumes,
        });
        // Set on the merge, `id_bytes` was accepted and then read by nobody.
        if let (Some(b), Value::Object(o)) = (self.id_bytes, &mut inherited) {
            o.insert("id_bytes".into(), Value::from(b));
        }
        let own_id_bytes = m.contains_key("id_bytes");
        for (k, v) in inherited.as_object().into_iter().flatten() {
            m.entry(k.clone()).or_insert_with(|| v.clone());
        }
        let mut s: Self = serde_path_to_error::deserialize(Value::Object(m)).map_err(|e| {
            let p = e.path().to_string();
            TraceError::option(
                if p == "." { key.clone() } else { format!("{key}.{p}") },
                prefetchsim_core::component::plain_message(&e.inner().to_string()),
            )
        })?;
        if s.path.is_empty() {
            return Err(TraceError::option(format!("{key}.path"), "a member needs a path (or generator name)"));
        }
        if !s.merge.is_empty() {
            return Err(TraceError::option(format!("{key}.merge"), "members cannot be merges themselves"));
        }
        if s.block_size != self.block_size {
            return Err(TraceError::option(
                format!("{key}.block_size"),
                format!("{} differs from the merged trace's block size {}", s.block_size, self.block_size),
            ));
        }
        s.validate().map_err(|e| in_member(&key, e))?;
        s.id_bytes_inherited = s.id_bytes.is_some() && !own_id_bytes;
        Ok(s)
    }

    /// A spec for `path` in `format`.
    pub fn with_format(path: impl Into<String>, format: &str) -> Self {
        Self { format: Some(format.to_string()), ..Self::new(path) }
    }

    /// Parse from a JSON value (what Python passes), naming the offending key on error.
    pub fn from_json(v: Value) -> Result<Self, TraceError> {
        let s: Self = serde_path_to_error::deserialize(v).map_err(|e| {
            let p = e.path().to_string();
            TraceError::option(
                if p == "." { "trace".into() } else { format!("trace.{p}") },
                prefetchsim_core::component::plain_message(&e.inner().to_string()),
            )
        })?;
        s.validate()?;
        Ok(s)
    }

    /// Check the numeric options.
    pub fn validate(&self) -> Result<(), TraceError> {
        if self.block_size == 0 {
            return Err(TraceError::option("trace.block_size", "must be at least 1 byte"));
        }
        if self.sector_size == 0 {
            return Err(TraceError::option("trace.sector_size", "must be at least 1 byte"));
        }
        if self.id_bytes == Some(0) {
            return Err(TraceError::option("trace.id_bytes", "must be at least 1 byte"));
        }
        if self.merge.is_empty() && self.path.is_empty() {
            return Err(TraceError::option(
                "trace.path",
                "missing: give a trace file, a generator name or merge = [...]",
            ));
        }
        if self.merge.is_empty() && !self.member_space.is_default() {
            return Err(TraceError::option("trace.member_space", "only a merge has members; drop member_space"));
        }
        if !self.merge.is_empty() && !self.client_from.is_default() {
            return Err(TraceError::option("trace.client_from", "a merge sets each member's client; drop client_from"));
        }
        if !self.merge.is_empty() && self.format.is_some() {
            return Err(TraceError::option("trace.format", "a merge has no format of its own; set it per member"));
        }
        if !self.merge.is_empty() && !self.params.is_empty() {
            return Err(TraceError::option(
                "trace.params",
                "a merge has no parameters of its own; set them per member",
            ));
        }
        for i in 0..self.merge.len() {
            self.member(i)?;
        }
        Ok(())
    }

    /// The trace file (or merge member's file) that `output` names, if any: writing there would replace
    /// the trace being read (`trace convert t.lis t.lis` did). Same file by canonical path, and on Unix
    /// also by device and inode (a hard link); an output that does not exist yet is none of them.
    #[must_use]
    pub fn file_written_by(&self, output: &std::path::Path) -> Option<String> {
        let Ok(out) = std::fs::canonicalize(output) else { return None };
        let same = |input: &str| {
            std::fs::canonicalize(input).is_ok_and(|i| i == out) || {
                #[cfg(unix)]
                {
                    use std::os::unix::fs::MetadataExt;
                    match (std::fs::metadata(input), std::fs::metadata(&out)) {
                        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
                        _ => false,
                    }
                }
                #[cfg(not(unix))]
                false
            }
        };
        if self.merge.is_empty() {
            return (!self.is_synthetic() && same(&self.path)).then(|| self.path.clone());
        }
        (0..self.merge.len()).filter_map(|i| self.member(i).ok()).find_map(|m| m.file_written_by(output))
    }

    /// Whether this names a synthetic generator.
    #[must_use]
    pub fn is_synthetic(&self) -> bool {
        self.format.as_deref().is_some_and(|f| f.eq_ignore_ascii_case("synthetic"))
    }

    /// The format to use: the given one (validated) or the detected one.
    pub fn resolved_format(&self) -> Result<&'static str, TraceError> {
        match self.format.as_deref() {
            None | Some("auto") | Some("") => detect::detect_with(&self.path, self.skip_bad, &self.params),
            Some(name) => formats::canonical(&self.path, name),
        }
    }

    /// Open the trace as a stream of requests.
    pub fn open(&self) -> Result<Box<dyn RequestSource + Send>, TraceError> {
        self.validate()?;
        if !self.merge.is_empty() {
            // A member's own option errors (a generator's parameters, its format's keys) name the member.
            let members = (0..self.merge.len())
                .map(|i| self.member(i)?.open().map_err(|e| in_member(&format!("trace.merge[{i}]"), e)))
                .collect::<Result<Vec<_>, _>>()?;
            return Ok(Box::new(Merged::with_space(members, self.member_space)));
        }
        let src = self.open_one()?;
        Ok(match self.client_from {
            ClientFrom::Trace => src,
            ClientFrom::Stream => Box::new(StreamAsClient { src }),
        })
    }

    /// Open one file or generator (no merge, no client relabelling).
    fn open_one(&self) -> Result<Box<dyn RequestSource + Send>, TraceError> {
        self.check_id_bytes(None)?;
        if self.is_synthetic() {
            let src = synth::open(&self.path, &self.params, self.block_size)?;
            return Ok(match self.ops {
                OpsFilter::All => src,
                ops => Box::new(OpsFiltered { src, ops, buf: Vec::new() }),
            });
        }
        if self.cache {
            if let Some(settings) = crate::cache::CacheSettings::from_env()? {
                return crate::cache::open(self, &settings);
            }
        }
        Ok(Box::new(self.open_file()?))
    }

    /// Open a trace file (not a generator) as a [`TraceSource`].
    pub fn open_file(&self) -> Result<TraceSource, TraceError> {
        let format = self.resolved_format()?;
        let input = compress::open(&self.path)?;
        let reader = formats::open(format, &self.path, input, self)?;
        self.check_id_bytes(Some((format, reader.addr_unit())))?;
        Ok(TraceSource::new(reader, self))
    }

    /// `id_bytes` set where it would do nothing is an error: on a generator, in objects mode, or on a
    /// format (once known: its name and address unit) that addresses bytes or sectors rather than ids.
    fn check_id_bytes(&self, format: Option<(&str, AddrUnit)>) -> Result<(), TraceError> {
        if self.id_bytes.is_none() || self.id_bytes_inherited {
            return Ok(());
        }
        let why = if self.is_synthetic() {
            "a generator emits blocks, not ids".to_string()
        } else if self.mode == Mode::Objects {
            "objects mode takes each id as one object".to_string()
        } else {
            match format {
                Some((name, unit)) if unit != AddrUnit::Ids => {
                    let by = match unit {
                        AddrUnit::Bytes => "bytes",
                        AddrUnit::Blocks(_) => "blocks",
                        _ => "sectors",
                    };
                    format!("the {name} format addresses {by}, not ids")
                }
                _ => return Ok(()),
            }
        };
        Err(TraceError::option(
            "trace.id_bytes",
            format!("{why}; id_bytes applies to id-addressed formats (LIRS, u32le/u32be, oracleGeneral, CSV ids) in blocks mode"),
        ))
    }
}

/// A generator's requests with an ops filter applied (generators emit block requests directly, so only
/// the filter of [`Converter`] applies to them; `mode` has no meaning for a generator).
struct OpsFiltered {
    src: Box<dyn RequestSource + Send>,
    ops: OpsFilter,
    buf: Vec<Request>,
}

impl RequestSource for OpsFiltered {
    fn fill(&mut self, out: &mut Vec<Request>, max: usize) -> Result<usize, SourceError> {
        let want = if self.ops == OpsFilter::Reads { Op::Read } else { Op::Write };
        let start = out.len();
        while out.len() - start < max {
            self.buf.clear();
            if self.src.fill(&mut self.buf, max - (out.len() - start))? == 0 {
                break;
            }
            out.extend(self.buf.iter().filter(|r| r.op == want));
        }
        Ok(out.len() - start)
    }

    fn report(&self) -> SourceReport {
        self.src.report()
    }

    fn facts(&self) -> prefetchsim_core::TraceFacts {
        self.src.facts()
    }
}

/// Records decoded per batch.
pub(crate) const BATCH: usize = 4096;

/// Messages of skipped records kept for the report (the count goes on).
pub const SKIPPED_MESSAGES: usize = 5;

/// A trace file streamed as requests: records are decoded in batches (one virtual call per batch)
/// and converted, so the per-request cost is a tight loop.
///
/// **Malformed input.** Strict by default: the first bad record ends the stream with an error naming the
/// file, the line and its byte offset (text) or the record index and its byte offset (binary), and the
/// field. With [`TraceSpec::skip_bad`] = N, up to N bad records are skipped and counted (the first
/// [`SKIPPED_MESSAGES`] messages are kept, see [`RequestSource::report`]) and the N+1th is an error
/// saying the limit was passed. A bad record is one the reader can step over: a text line that does not
/// parse, a blank run inside the file or an overlong line, a fixed-size binary record with a bad field
/// (vscsi version or command, a time that overflows), a record whose size does not fit one request.
/// What cannot be skipped, whatever N: an I/O error or a corrupt compressed stream (nothing after the
/// damage can be trusted), and a binary file that ends inside a record (a truncated tail: there is no
/// next record to re-synchronise on; the records before it are read, then the error comes).
///
/// **Time going backwards** is not an error: records stay in file order (the SYSTOR'17 samples are
/// slightly out of order), and the requests kept (by the ops filter) that are earlier than the request
/// kept before them are counted in the report's `time_backwards`.
///
/// **Volumes** of a multi-volume format are separate address spaces unless `volumes = "shared"`
/// ([`crate::volumes`]). The report's `request_bytes` sums the kept records' own sizes where the format
/// states them in bytes ([`RecordReader::byte_sizes`]).
pub struct TraceSource {
    reader: Box<dyn RecordReader>,
    conv: Converter,
    path: String,
    records: u64,
    raw: Vec<RawRecord>,
    /// The volume index of each record of `raw` (empty with one address space).
    vols: Vec<u64>,
    volumes: Option<VolumeSpace>,
    /// Objects mode: an address out of a volume's space is an object's start, not a block (its message).
    objects: bool,
    next: usize,
    skip_bad: u64,
    /// Bad records skipped (the report's count also holds records a reader dropped by an option).
    bad: u64,
    report: SourceReport,
    last_time: u64,
}

impl TraceSource {
    /// Wrap a record reader.
    #[must_use]
    pub fn new(reader: Box<dyn RecordReader>, spec: &TraceSpec) -> Self {
        let conv = Converter::new(spec, reader.addr_unit());
        let volumes = VolumeSpace::new(reader.volume_key(), spec.volumes);
        let request_bytes = reader.byte_sizes().then_some(0);
        Self {
            reader,
            conv,
            path: spec.path.clone(),
            records: 0,
            raw: Vec::with_capacity(BATCH),
            vols: Vec::new(),
            volumes,
            objects: spec.mode == Mode::Objects,
            next: 0,
            skip_bad: spec.skip_bad,
            bad: 0,
            report: SourceReport { request_bytes, ..SourceReport::default() },
            last_time: 0,
        }
    }

    /// Records read so far (before the ops filter; skipped records are not counted).
    #[must_use]
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Skip the bad record of `e` if it can be skipped and the limit allows, else return the error.
    #[cold]
    fn skip(&mut self, e: TraceError) -> Result<(), TraceError> {
        if !e.is_skippable() || self.skip_bad == 0 {
            return Err(e);
        }
        if self.bad >= self.skip_bad {
            return Err(TraceError::SkipLimit { limit: self.skip_bad, last: Box::new(e) });
        }
        self.bad += 1;
        self.report.skipped += 1;
        if self.report.skipped_messages.len() < SKIPPED_MESSAGES {
            self.report.skipped_messages.push(e.to_string());
        }
        Ok(())
    }

    /// The request of raw record `i` of the batch (`None` when the ops filter drops it or the record is
    /// skipped), in its volume's address space; a kept request counts in the report.
    #[inline]
    fn convert(&mut self, i: usize) -> Result<Option<Request>, TraceError> {
        let rec = self.raw[i];
        let placed = match self.conv.convert(&rec) {
            Err((blame, m)) => Err((Some(blame), m)),
            Ok(Some(mut r)) if self.volumes.is_some() => {
                let index = self.vols[i];
                match VolumeSpace::place(index, r.first, r.len, self.objects) {
                    Ok(first) => {
                        r.first = first;
                        Ok(Some(r))
                    }
                    // Too many volumes is the volume field's fault (None), not the address's.
                    Err(m) => Err(((index < MAX_VOLUMES).then_some(Blame::Addr), m)),
                }
            }
            Ok(r) => Ok(r),
        };
        match placed {
            Ok(Some(r)) => {
                self.kept(&r, rec.size);
                Ok(Some(r))
            }
            Ok(None) => Ok(None),
            Err((blame, m)) => {
                let (addr, size) = self.reader.addr_size_fields();
                let field = match blame {
                    Some(Blame::Addr) => addr,
                    Some(Blame::Size) => size,
                    None => self.reader.volume_field(),
                };
                let e = TraceError::malformed(&self.path, self.reader.locate(rec.pos), field, m);
                self.skip(e)?;
                Ok(None)
            }
        }
    }

    /// Account for a request kept: time going backwards among the requests kept (not the records read:
    /// a trace and its `--ops reads` conversion must agree) and the requests' own bytes.
    #[inline]
    fn kept(&mut self, r: &Request, size: u64) {
        self.report.time_backwards += u64::from(r.time_ns < self.last_time);
        self.last_time = r.time_ns;
        if let Some(b) = &mut self.report.request_bytes {
            *b = b.saturating_add(size);
        }
    }

    /// Make sure undelivered raw records are buffered; false at the end of the trace.
    fn refill(&mut self) -> Result<bool, TraceError> {
        if self.next < self.raw.len() {
            return Ok(true);
        }
        self.raw.clear();
        self.next = 0;
        while self.raw.len() < BATCH {
            // On an error the records read before the bad one are already in `raw`.
            let room = BATCH - self.raw.len();
            match self.reader.fill_records(&mut self.raw, room) {
                Ok(_) => break,
                Err(e) => self.skip(e)?,
            }
        }
        self.conv.set_unit(self.reader.addr_unit());
        let (dropped, messages) = self.reader.take_dropped();
        if dropped > 0 {
            self.report.skipped += dropped;
            let room = SKIPPED_MESSAGES.saturating_sub(self.report.skipped_messages.len());
            self.report.skipped_messages.extend(messages.into_iter().take(room));
        }
        if let Some(space) = &mut self.volumes {
            // Every record, before the ops filter: a filtered read numbers the volumes as the whole does.
            self.vols.clear();
            self.vols.extend(self.raw.iter().map(|r| space.index(r)));
        }
        self.records += self.raw.len() as u64;
        Ok(!self.raw.is_empty())
    }

    /// The next request, or `None` at the end.
    pub fn next_request(&mut self) -> Result<Option<Request>, TraceError> {
        while self.refill()? {
            let i = self.next;
            self.next += 1;
            if let Some(r) = self.convert(i)? {
                return Ok(Some(r));
            }
        }
        Ok(None)
    }

    /// What was skipped and noticed so far.
    #[must_use]
    pub fn source_report(&self) -> &SourceReport {
        &self.report
    }
}

impl RequestSource for TraceSource {
    fn fill(&mut self, buf: &mut Vec<Request>, max: usize) -> Result<usize, SourceError> {
        let start = buf.len();
        while buf.len() - start < max && self.refill()? {
            let take = (self.raw.len() - self.next).min(max - (buf.len() - start));
            let mut from = self.next;
            if self.conv.is_identity() && self.volumes.is_none() {
                // Every record is the one-block request of its address; only the last block of the
                // address space cannot be one (the general conversion below reports it).
                let recs = &self.raw[from..self.next + take];
                let ok = recs.iter().position(|r| r.addr == u64::MAX).unwrap_or(recs.len());
                let (mut last, mut backwards, mut bytes) = (self.last_time, 0, 0u64);
                buf.extend(recs[..ok].iter().map(|r| {
                    backwards += u64::from(r.time_ns < last);
                    last = r.time_ns;
                    bytes = bytes.saturating_add(r.size);
                    Request { time_ns: r.time_ns, first: r.addr, len: 1, op: r.op, stream: r.stream, client: r.client }
                }));
                self.last_time = last;
                self.report.time_backwards += backwards;
                if let Some(b) = &mut self.report.request_bytes {
                    *b = b.saturating_add(bytes);
                }
                from += ok;
            }
            for i in from..self.next + take {
                if let Some(r) = self.convert(i)? {
                    buf.push(r);
                }
            }
            self.next += take;
        }
        Ok(buf.len() - start)
    }

    fn report(&self) -> SourceReport {
        self.report.clone()
    }

    /// What the format declares ([`RecordReader::stream_ids`]).
    fn facts(&self) -> prefetchsim_core::TraceFacts {
        prefetchsim_core::TraceFacts::with_stream_ids(self.reader.stream_ids())
    }
}

impl Iterator for TraceSource {
    type Item = Result<Request, TraceError>;
    fn next(&mut self) -> Option<Self::Item> {
        self.next_request().transpose()
    }
}
