//! `ondemand` mode: one window and a marker page, Linux 2.6.23 and later (v6.x `mm/readahead.c`
//! `ondemand_readahead`, `try_context_readahead`), restated from the rules in
//! `shared/docs/algorithms/linux-readahead.md`, over one stream's state.

use super::{init_size, next_size_ondemand, Io, OndemandState};
/// The v6.x on-demand functions.
pub(super) struct Ondemand {
    pub(super) max: u64,
    pub(super) io_pages: Option<u64>,
}

impl Ondemand {
    /// `ondemand_readahead` for page `i` of a read of `req` pages from `i` (`marked`: a marker hit).
    fn ra(&self, st: &mut OndemandState, io: &mut Io<'_>, i: u64, req: u64, marked: bool) {
        let mut max = self.max;
        if let Some(p) = self.io_pages {
            if req > max && p > max {
                max = req.min(p);
            }
        }
        let initial = 'decide: {
            if i == 0 {
                break 'decide true;
            }
            // Saturating near the top of the block space (a debug build overflowed there).
            let end = st.start.saturating_add(st.size);
            if i == end - st.async_size || i == end {
                st.start = end;
                st.size = next_size_ondemand(st.size, max);
                st.async_size = st.size;
                break 'decide false;
            }
            if marked {
                // A marker hit with no matching state (interleaved streams): find the next hole.
                let end = i.saturating_add(max);
                let h = (i + 1..=end).find(|&x| x > io.eof || !io.cached(x)).unwrap_or(end);
                st.start = h;
                st.size = next_size_ondemand(h - i + req, max);
                st.async_size = st.size;
                break 'decide false;
            }
            if req > max || i.wrapping_sub(st.prev_index) <= 1 {
                break 'decide true;
            }
            // `try_context_readahead`: cached history directly before i.
            let mut c = 0;
            while c < max && c < i && io.cached(i - 1 - c) {
                c += 1;
            }
            if c > req {
                if c >= i {
                    c *= 2;
                }
                st.start = i;
                st.size = (c + req).min(max);
                st.async_size = 1;
                break 'decide false;
            }
            // A standalone random read: read what was asked, keep the state.
            io.read(i, req);
            return;
        };
        if initial {
            st.start = i;
            st.size = init_size(req, max);
            st.async_size = if st.size > req { st.size - req } else { st.size };
        }
        if i == st.start && st.size == st.async_size {
            // The read would hit its own marker at once: merge the next window into this one.
            let add = next_size_ondemand(st.size, max);
            if st.size + add <= max {
                st.async_size = add;
                st.size += add;
            } else {
                st.size = max;
                st.async_size = max / 2;
            }
        }
        let mark = st.start.saturating_add(st.size) - st.async_size;
        let allocated = st.async_size > 0 && mark <= io.eof && !io.cached(mark);
        io.read(st.start, st.size);
        if allocated {
            io.marks.insert(mark, ());
        }
    }

    /// One request, block by block as `filemap_get_pages` meets missing and marked pages.
    pub(super) fn request(&self, st: &mut OndemandState, io: &mut Io<'_>) {
        let mut idx = io.s;
        loop {
            io.cursor = idx;
            let req = io.e - idx + 1;
            if !io.cached_at_cursor() {
                io.marks.remove(idx); // a page that is not there carries no marker
                self.ra(st, io, idx, req, false);
            } else if io.marks.remove(idx).is_some() {
                self.ra(st, io, idx, req, true);
            }
            if idx == io.e {
                break;
            }
            idx += 1;
        }
        st.prev_index = io.e.wrapping_add(1);
    }
}
