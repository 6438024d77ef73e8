//! Index-linked doubly linked lists over slot numbers, and a keyed list for ghost entries.
//!
//! No `unsafe`, no `Rc<RefCell>`: links live in plain `Vec<u32>` arrays indexed by slot (the
//! quick-cache / foyer habit). Several lists may share one [`Links`] arena as long as a slot is on at
//! most one of them at a time (ARC's T1 and T2, SplitLRU's Up and Down).
//!
//! Orientation: `head` is the insertion (MRU) end, `tail` the eviction (LRU) end. "After" a node means
//! one step toward the tail.

use super::table::{block_map, BlockMap, BlockTable};
use super::tail_memo::{Marks, TailMemo};

/// The null link.
pub const NIL: u32 = u32::MAX;

/// The two links of one slot, side by side (one bounds check and one cache line per node).
#[derive(Clone, Copy, Debug)]
struct Link {
    prev: u32,
    next: u32,
}

const UNLINKED: Link = Link { prev: NIL, next: NIL };

/// Link arrays shared by one or more [`List`]s.
#[derive(Clone, Debug, Default)]
pub struct Links {
    nodes: Vec<Link>,
    /// The runs of in-flight nodes that victim searches have passed ([`TailMemo`]); empty until the tail
    /// of a list is first found pinned.
    pub(super) marks: Marks,
}

impl Links {
    /// Links for `n` slots.
    #[must_use]
    pub fn with_capacity(n: usize) -> Self {
        Self { nodes: vec![UNLINKED; n], marks: Marks::default() }
    }

    /// Make `slot` addressable; slots past the initial capacity are rare (timed overflow), so growth is
    /// out of line.
    #[inline]
    fn ensure(&mut self, slot: u32) {
        if slot as usize >= self.nodes.len() {
            self.grow(slot);
        }
    }

    #[cold]
    fn grow(&mut self, slot: u32) {
        let n = (slot as usize + 1).max(self.nodes.len() * 2).max(16);
        self.nodes.resize(n, UNLINKED);
    }

    /// The node after `slot` (toward the tail), if any.
    #[inline]
    #[must_use]
    pub fn next(&self, slot: u32) -> Option<u32> {
        let n = self.nodes[slot as usize].next;
        (n != NIL).then_some(n)
    }

    /// The node before `slot` (toward the head), if any.
    #[inline]
    #[must_use]
    pub fn prev(&self, slot: u32) -> Option<u32> {
        let p = self.nodes[slot as usize].prev;
        (p != NIL).then_some(p)
    }
}

/// Grow a per-slot array so that `slot` is a valid index (slots may exceed the capacity briefly in timed
/// runs); doubles, so growth is amortised O(1).
pub(crate) fn grow<T: Copy>(v: &mut Vec<T>, slot: u32, fill: T) {
    let need = slot as usize + 1;
    if v.len() < need {
        let n = need.max(v.len() * 2).max(16);
        v.resize(n, fill);
    }
}

/// One list: its two ends and length; the links live in a [`Links`] arena.
#[derive(Clone, Debug)]
pub struct List {
    head: u32,
    tail: u32,
    len: usize,
    /// Where the last victim search stopped, once one found the tail in flight (timed runs only).
    memo: Option<Box<TailMemo>>,
}

impl Default for List {
    fn default() -> Self {
        Self { head: NIL, tail: NIL, len: 0, memo: None }
    }
}

impl List {
    /// Number of nodes.
    #[must_use]
    pub fn len(&self) -> usize {
        self.len
    }
    /// No node.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The MRU end.
    #[must_use]
    pub fn head(&self) -> Option<u32> {
        (self.head != NIL).then_some(self.head)
    }
    /// The LRU end.
    #[must_use]
    pub fn tail(&self) -> Option<u32> {
        (self.tail != NIL).then_some(self.tail)
    }

    /// Insert `slot` at the head (MRU end).
    #[inline]
    pub fn push_front(&mut self, links: &mut Links, slot: u32) {
        links.ensure(slot);
        links.nodes[slot as usize] = Link { prev: NIL, next: self.head };
        if self.head == NIL {
            self.tail = slot;
        } else {
            links.nodes[self.head as usize].prev = slot;
        }
        self.head = slot;
        self.len += 1;
        if let Some(m) = &mut self.memo {
            m.on_push_front(slot);
        }
    }

    /// Insert `slot` at the tail (LRU end).
    #[inline]
    pub fn push_back(&mut self, links: &mut Links, slot: u32) {
        links.ensure(slot);
        links.nodes[slot as usize] = Link { prev: self.tail, next: NIL };
        if self.tail == NIL {
            self.head = slot;
        } else {
            links.nodes[self.tail as usize].next = slot;
        }
        self.tail = slot;
        self.len += 1;
        if let Some(m) = &mut self.memo {
            m.on_push_back();
        }
    }

    /// Insert `slot` right after `at` (one step toward the tail). `at` must be on this list.
    #[inline]
    pub fn insert_after(&mut self, links: &mut Links, at: u32, slot: u32) {
        links.ensure(slot);
        let nx = links.nodes[at as usize].next;
        links.nodes[slot as usize] = Link { prev: at, next: nx };
        links.nodes[at as usize].next = slot;
        if nx == NIL {
            self.tail = slot;
        } else {
            links.nodes[nx as usize].prev = slot;
        }
        self.len += 1;
        if let Some(m) = &mut self.memo {
            m.on_insert_after(&links.marks, at, slot);
        }
    }

    /// Insert `slot` right before `at` (one step toward the head). `at` must be on this list.
    #[inline]
    pub fn insert_before(&mut self, links: &mut Links, at: u32, slot: u32) {
        match links.prev(at) {
            Some(p) => self.insert_after(links, p, slot),
            None => self.push_front(links, slot),
        }
    }

    /// Remove `slot`, which must be on this list.
    #[inline]
    pub fn unlink(&mut self, links: &mut Links, slot: u32) {
        let Link { prev: p, next: n } = links.nodes[slot as usize];
        if let Some(m) = &mut self.memo {
            m.on_unlink(&mut links.marks, slot, (p != NIL).then_some(p));
        }
        if p == NIL {
            self.head = n;
        } else {
            links.nodes[p as usize].next = n;
        }
        if n == NIL {
            self.tail = p;
        } else {
            links.nodes[n as usize].prev = p;
        }
        links.nodes[slot as usize] = UNLINKED;
        self.len -= 1;
    }

    /// Move `slot` (on this list) to the head.
    #[inline]
    pub fn move_to_front(&mut self, links: &mut Links, slot: u32) {
        if self.head != slot {
            self.unlink(links, slot);
            self.push_front(links, slot);
        }
    }

    /// Move `slot` (on this list) to the tail.
    #[inline]
    pub fn move_to_back(&mut self, links: &mut Links, slot: u32) {
        if self.tail != slot {
            self.unlink(links, slot);
            self.push_back(links, slot);
        }
    }

    /// Move the nodes from the tail through `last` (toward the head) to the head, in their order: what
    /// moving the tail to the head once per node does, in one splice (CLOCK's hand passing a run of frames;
    /// `policy::clock_runs`). `last` must be on this list and not its head.
    #[inline]
    pub fn rotate_tail_through(&mut self, links: &mut Links, last: u32) {
        let p = links.nodes[last as usize].prev;
        debug_assert!(p != NIL, "rotate_tail_through: the run is the whole list");
        // Only CLOCK rotates, and it never searches with the memo; a memo would no longer describe the list.
        debug_assert!(self.memo.is_none(), "rotate_tail_through on a list with a victim-search memo");
        self.memo = None;
        let (first, head) = (self.tail, self.head);
        links.nodes[p as usize].next = NIL;
        self.tail = p;
        links.nodes[last as usize].prev = NIL;
        links.nodes[first as usize].next = head;
        links.nodes[head as usize].prev = first;
        self.head = last;
    }

    /// Remove and return the tail.
    #[inline]
    pub fn pop_back(&mut self, links: &mut Links) -> Option<u32> {
        let t = self.tail()?;
        self.unlink(links, t);
        Some(t)
    }

    /// Remove and return the head.
    #[inline]
    pub fn pop_front(&mut self, links: &mut Links) -> Option<u32> {
        let h = self.head()?;
        self.unlink(links, h);
        Some(h)
    }

    /// The node nearest the tail whose block is not pinned (in flight): the LRU victim of this list. Left
    /// on the list (the caller unlinks it if it takes it). When the tail is in flight, the search goes on
    /// where the last one stopped (`policy::tail_memo`) instead of walking the blocks in flight again.
    #[inline]
    #[must_use]
    pub fn last_unpinned(&mut self, links: &mut Links, table: &BlockTable) -> Option<u32> {
        // Every block in flight (a slow device far behind): nothing to find, without walking the list.
        if table.all_pinned() {
            return None;
        }
        let tail = self.tail()?;
        if !table.entry(tail).pinned() {
            return Some(tail);
        }
        let Links { nodes, marks } = links;
        let prev = |s: u32| {
            let p = nodes[s as usize].prev;
            (p != NIL).then_some(p)
        };
        let found = self.memo.get_or_insert_with(Box::default).last_unpinned(marks, prev, nodes.len(), table, tail);
        #[cfg(debug_assertions)]
        {
            let walked = self.iter_from_tail(links).find(|&s| !table.entry(s).pinned());
            assert_eq!(found, walked, "the victim search's memo disagrees with a walk from the tail");
        }
        found
    }

    /// Nodes from head (MRU) to tail (LRU).
    pub fn iter<'a>(&self, links: &'a Links) -> impl Iterator<Item = u32> + 'a {
        let mut cur = self.head;
        std::iter::from_fn(move || {
            (cur != NIL).then(|| {
                let c = cur;
                cur = links.nodes[c as usize].next;
                c
            })
        })
    }

    /// Nodes from tail (LRU) to head (MRU).
    pub fn iter_from_tail<'a>(&self, links: &'a Links) -> impl Iterator<Item = u32> + 'a {
        let mut cur = self.tail;
        std::iter::from_fn(move || {
            (cur != NIL).then(|| {
                let c = cur;
                cur = links.nodes[c as usize].prev;
                c
            })
        })
    }
}

/// A list of block numbers with a value each, found by block: ghost lists (ARC's B1/B2, 2Q's A1out,
/// MQ's Qout) and other bounded block histories.
#[derive(Debug)]
pub struct KeyedList<V: Copy + Default> {
    map: BlockMap<u32>,
    keys: Vec<u64>,
    vals: Vec<V>,
    links: Links,
    list: List,
    free: Vec<u32>,
}

impl<V: Copy + Default> KeyedList<V> {
    /// An empty list with room for `cap` keys.
    #[must_use]
    pub fn with_capacity(cap: usize) -> Self {
        Self {
            map: block_map(cap),
            keys: Vec::with_capacity(cap),
            vals: Vec::with_capacity(cap),
            links: Links::with_capacity(cap),
            list: List::default(),
            free: Vec::new(),
        }
    }

    /// Number of keys.
    #[must_use]
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// No key.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Whether `key` is on the list.
    #[must_use]
    pub fn contains(&self, key: u64) -> bool {
        self.map.contains_key(&key)
    }

    /// The value stored with `key`.
    #[must_use]
    pub fn get(&self, key: u64) -> Option<V> {
        self.map.get(&key).map(|&i| self.vals[i as usize])
    }

    /// Put `key` at the head (MRU end) with `val`; if present, move it there and replace its value.
    pub fn push_front(&mut self, key: u64, val: V) {
        if let Some(&i) = self.map.get(&key) {
            self.vals[i as usize] = val;
            self.list.move_to_front(&mut self.links, i);
            return;
        }
        let i = if let Some(i) = self.free.pop() {
            self.keys[i as usize] = key;
            self.vals[i as usize] = val;
            i
        } else {
            let i = u32::try_from(self.keys.len()).expect("ghost list over 2^32 keys");
            self.keys.push(key);
            self.vals.push(val);
            i
        };
        self.map.insert(key, i);
        self.list.push_front(&mut self.links, i);
    }

    /// Remove `key`; returns its value if it was present.
    pub fn remove(&mut self, key: u64) -> Option<V> {
        let i = self.map.remove(&key)?;
        self.list.unlink(&mut self.links, i);
        self.free.push(i);
        Some(self.vals[i as usize])
    }

    /// Remove and return the tail (LRU / oldest) key and value.
    pub fn pop_back(&mut self) -> Option<(u64, V)> {
        let i = self.list.pop_back(&mut self.links)?;
        let key = self.keys[i as usize];
        self.map.remove(&key);
        self.free.push(i);
        Some((key, self.vals[i as usize]))
    }

    /// The tail (LRU / oldest) key and value, left in place.
    #[must_use]
    pub fn back(&self) -> Option<(u64, V)> {
        self.list.tail().map(|i| (self.keys[i as usize], self.vals[i as usize]))
    }

    /// Keys from head to tail.
    pub fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        self.list.iter(&self.links).map(|i| self.keys[i as usize])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(list: &List, links: &Links) -> Vec<u32> {
        list.iter(links).collect()
    }

    #[test]
    fn list_keeps_order_through_inserts_moves_and_unlinks() {
        let mut links = Links::default();
        let mut l = List::default();
        l.push_front(&mut links, 1);
        l.push_front(&mut links, 2);
        l.push_back(&mut links, 3);
        l.insert_after(&mut links, 2, 4);
        assert_eq!(order(&l, &links), vec![2, 4, 1, 3]);
        l.move_to_front(&mut links, 3);
        assert_eq!(order(&l, &links), vec![3, 2, 4, 1]);
        l.unlink(&mut links, 2);
        assert_eq!(order(&l, &links), vec![3, 4, 1]);
        assert_eq!(l.iter_from_tail(&links).collect::<Vec<_>>(), vec![1, 4, 3]);
        assert_eq!(l.pop_back(&mut links), Some(1));
        l.insert_before(&mut links, 3, 9);
        assert_eq!(order(&l, &links), vec![9, 3, 4]);
        assert_eq!(l.len(), 3);
        l.move_to_back(&mut links, 9);
        assert_eq!(order(&l, &links), vec![3, 4, 9]);
    }

    #[test]
    fn keyed_list_finds_moves_and_evicts_oldest() {
        let mut g: KeyedList<u32> = KeyedList::with_capacity(4);
        g.push_front(10, 1);
        g.push_front(20, 2);
        g.push_front(30, 3);
        assert!(g.contains(20));
        g.push_front(10, 7);
        assert_eq!(g.iter().collect::<Vec<_>>(), vec![10, 30, 20]);
        assert_eq!(g.pop_back(), Some((20, 2)));
        assert_eq!(g.remove(10), Some(7));
        assert_eq!(g.remove(10), None);
        assert_eq!(g.len(), 1);
    }
}
