//! `pfc-paper` mode: the PFC paper's account of Linux 2.6 read-ahead (Zhang et al., ICDCS 2008, §2.2;
//! rules in `shared/docs/algorithms/linux-readahead.md` §C), over one stream's state.

use super::{Io, PaperState};
/// `pfc-paper` for one request (linux-readahead.md §C).
pub(super) fn paper(st: &mut PaperState, io: &mut Io<'_>, min: u64, max: u64, every_access: bool) {
    let (s, e) = (io.s, io.e);
    let inside = |r: Option<(u64, u64)>| r.is_some_and(|(a, b)| s >= a && s <= b);
    match st.group {
        Some((g0, g1)) if inside(st.group) || inside(st.prev_group) => {
            if every_access || e >= g0 {
                let size = (2 * (g1 - g0 + 1)).min(max);
                let a = g1.max(e).saturating_add(1);
                st.prev_group = st.group;
                st.group = Some((a, a.saturating_add(size - 1)));
                io.read(a, size);
            }
        }
        _ => {
            let a = e.saturating_add(1);
            st.prev_group = None;
            st.group = Some((a, a.saturating_add(min - 1)));
            io.read(a, min);
        }
    }
}
