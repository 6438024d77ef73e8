//! Next uses a trace states itself: libCacheSim's oracleGeneral records carry `next_access_vtime`, the
//! position of the object's next request, so Belady's MIN (`opt`) at the first level needs no pre-pass of
//! its own over such a trace ([`prefetchsim_core::optimal::prepare`]).
//!
//! Convention: libCacheSim counts virtual time from 1 (its own `cloudPhysicsIO.oracleGeneral.bin` holds
//! `next_access_vtime` = 0-based index + 1 for every one of its 64,898 repeated requests, -1 for the
//! rest), and so does our writer. Files written by earlier versions of our writer count from 0: a file
//! whose values do not check out from 1 is tried from 0. The values are checked, never trusted blindly
//! ([`NextUse::from_next_access`]); a file whose field says nothing (every value negative) is left to the
//! pre-pass.

use prefetchsim_core::optimal::NextUse;

use crate::compress;
use crate::error::TraceError;
use crate::formats::input::BinInput;
use crate::formats::oracle_general::{fields, SIZE};
use crate::spec::{OpsFilter, TraceSpec};

/// The first level's next uses as `spec`'s trace states them, for its first `limit` requests: `None` when
/// the trace does not state them (not a plain oracleGeneral file, a filter that may drop records, a field
/// holding no information, or records that are not one block access each: with `id_bytes` a record covers
/// its size from its id's byte, so its next record is not its blocks' next access). A file whose field
/// contradicts its object ids is an error naming the record.
pub fn stated_next_uses(spec: &TraceSpec, limit: Option<u64>) -> Result<Option<NextUse>, TraceError> {
    if !spec.merge.is_empty()
        || spec.is_synthetic()
        || spec.skip_bad != 0
        || spec.ops == OpsFilter::Writes
        || spec.id_bytes.is_some()
    {
        return Ok(None);
    }
    if spec.resolved_format()? != "oracle_general" {
        return Ok(None);
    }
    let mut input = BinInput::new(compress::open(&spec.path)?, &spec.path);
    let (mut blocks, mut next) = (Vec::new(), Vec::new());
    let limit = limit.unwrap_or(u64::MAX);
    while (blocks.len() as u64) < limit {
        let Some((_, r)) = input.next::<SIZE>()? else { break };
        let (_, id, _, na) = fields(r);
        blocks.push(id);
        next.push(na);
    }
    if next.iter().all(|&v| v < 0) {
        return Ok(None);
    }
    let from_one: Vec<i64> = next.iter().map(|&v| if v >= 1 { v - 1 } else { -1 }).collect();
    match NextUse::from_next_access(&blocks, &from_one) {
        Ok(u) => Ok(Some(u)),
        Err((t, message)) => match NextUse::from_next_access(&blocks, &next) {
            Ok(u) => Ok(Some(u)),
            Err(_) => Err(TraceError::malformed(
                &spec.path,
                BinInput::location(t, SIZE),
                "next_access_vtime",
                format!("{message} (counting virtual time from 1, as libCacheSim does; from 0 it fails too)"),
            )),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(dir: &std::path::Path, recs: &[(u64, i64)]) -> String {
        let mut bytes = Vec::new();
        for &(id, na) in recs {
            bytes.extend_from_slice(&0u32.to_le_bytes());
            bytes.extend_from_slice(&id.to_le_bytes());
            bytes.extend_from_slice(&1u32.to_le_bytes());
            bytes.extend_from_slice(&na.to_le_bytes());
        }
        let p = dir.join(format!("t{}.oracleGeneral.bin", recs.len()));
        std::fs::write(&p, bytes).unwrap();
        p.to_string_lossy().into_owned()
    }

    #[test]
    fn both_counts_are_read_and_a_contradiction_names_the_record() {
        let dir = std::env::temp_dir().join(format!("psim-next-access-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let spec = |p: String| TraceSpec::with_format(p, "oracle_general");
        let one = stated_next_uses(&spec(file(&dir, &[(5, 3), (7, -1), (5, -1)])), None).unwrap().unwrap();
        let zero = stated_next_uses(&spec(file(&dir, &[(5, 2), (7, -1), (5, -1), (8, -1)])), None).unwrap().unwrap();
        assert_eq!((one.len(), one.blocks(), zero.len(), zero.blocks()), (3, 2, 4, 3));
        assert!(stated_next_uses(&spec(file(&dir, &[(5, -1), (5, -1)])), None).unwrap().is_none());
        // From 1: record 0 names record 1 (object 7); from 0: record 3 repeats 5 unnamed.
        let e = stated_next_uses(&spec(file(&dir, &[(5, 2), (7, -1), (5, -1), (5, -1)])), None).unwrap_err();
        assert!(e.to_string().contains("record 0") && e.to_string().contains("next_access_vtime"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
