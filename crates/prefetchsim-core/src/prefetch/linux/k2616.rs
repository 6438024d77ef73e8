//! `2.6.16` mode: the current and ahead windows of Linux 2.6.16 `mm/readahead.c` (`page_cache_readahead`,
//! `make_ahead_window`, `get_next_ra_size`, `handle_ra_miss` ...), restated from the rules in
//! `shared/docs/algorithms/linux-readahead.md`, over one stream's state.

use super::{init_size, Io, State2616};
/// The 2.6.16 functions, over one stream's state.
pub(super) struct K2616 {
    pub(super) max: u64,
    pub(super) min: u64,
    pub(super) max_cache_hit: u64,
}

impl K2616 {
    /// `get_next_ra_size`.
    fn next_size(&self, st: &mut State2616) -> u64 {
        let new = if st.miss {
            st.miss = false;
            st.size.saturating_sub(2).max(self.min)
        } else if st.size < self.max / 16 {
            4 * st.size
        } else {
            2 * st.size
        };
        new.min(self.max)
    }

    /// `ra_off`.
    fn off(st: &mut State2616) {
        st.start = 0;
        st.size = 0;
        st.miss = false;
        st.incache = false;
        Self::reset_ahead(st);
    }

    /// `reset_ahead_window`: keeps the old ahead end in `ahead_size`.
    fn reset_ahead(st: &mut State2616) {
        st.ahead_size = st.ahead_size.wrapping_add(st.ahead_start);
        st.ahead_start = 0;
    }

    /// `blockable_page_cache_readahead` with `check_ra_success` (no congestion: `block` is moot).
    fn try_read(&self, st: &mut State2616, io: &mut Io<'_>, off: u64, nr: u64) -> bool {
        if io.read_fresh(off, nr) {
            st.cache_hit = 0;
        } else {
            st.cache_hit += nr;
            if st.cache_hit >= self.max_cache_hit {
                Self::off(st);
                st.incache = true;
                return false;
            }
        }
        true
    }

    /// `make_ahead_window`.
    fn make_ahead(&self, st: &mut State2616, io: &mut Io<'_>, force: bool) -> bool {
        st.ahead_size = self.next_size(st);
        st.ahead_start = st.start.saturating_add(st.size);
        let ok = self.try_read(st, io, st.ahead_start, st.ahead_size);
        if !ok && !force {
            Self::reset_ahead(st);
        }
        ok
    }

    /// `page_cache_readahead(off, req)`; returns the next page at which the caller calls again.
    fn readahead(&self, st: &mut State2616, io: &mut Io<'_>, mut off: u64, mut req: u64) -> u64 {
        if off == st.prev_page {
            req -= 1;
            if req != 0 {
                off += 1;
            }
        }
        let seq = off == st.prev_page.wrapping_add(1);
        st.prev_page = off;
        let n = req.min(self.max);
        if n == 0 || st.incache {
            return st.prev_page.wrapping_add(1);
        }
        st.prev_page += n - 1;
        if seq && st.size == 0 {
            st.size = init_size(n, self.max);
            st.start = off;
            if self.try_read(st, io, off, st.size) && req >= self.max {
                self.make_ahead(st, io, true);
            }
            return st.prev_page.wrapping_add(1);
        }
        if !seq {
            Self::off(st);
            self.try_read(st, io, off, n);
            return st.prev_page.wrapping_add(1);
        }
        if st.ahead_start == 0 && !self.make_ahead(st, io, false) {
            st.prev_page = st.prev_page.min(st.ahead_start.wrapping_add(st.ahead_size).wrapping_sub(1));
            return st.prev_page.wrapping_add(1);
        }
        if st.prev_page >= st.ahead_start {
            st.start = st.ahead_start;
            st.size = st.ahead_size;
            self.make_ahead(st, io, false);
            st.prev_page = st.prev_page.min(st.ahead_start.wrapping_add(st.ahead_size).wrapping_sub(1));
        }
        st.prev_page.wrapping_add(1)
    }

    /// One request, page by page as `do_generic_mapping_read` calls read-ahead.
    pub(super) fn request(&self, st: &mut State2616, io: &mut Io<'_>) {
        let mut next = io.s;
        let mut idx = io.s;
        loop {
            io.cursor = idx;
            if idx == next {
                next = self.readahead(st, io, idx, io.e - idx + 1);
            }
            if !io.cached_at_cursor() {
                // `handle_ra_miss`: the page is still missing after read-ahead; read it alone.
                st.miss = true;
                st.incache = false;
                st.cache_hit = 0;
            }
            if idx == io.e {
                break;
            }
            idx += 1;
        }
    }
}
