//! A bounded table of per-stream contexts that forgets the least recently used one when full.
//!
//! Linux read-ahead keeps one context per stream (the kernel's `file_ra_state`); a trace of random
//! requests makes a new detected stream at almost every request, so the table turns over constantly and
//! each new context lands in the slot of the oldest one, which is cold in the processor's caches. Each
//! slot therefore keeps its key, its recency links and its context side by side in one record: a new
//! context costs one or two cache lines, not one per parallel array.

use hashbrown::HashMap;

use crate::policy::table::BlockHasher;

/// The null link.
const NIL: u32 = u32::MAX;

/// One slot: its key, its place in the recency order and its context.
#[derive(Debug)]
struct Node<T> {
    key: u64,
    /// Toward the most recently used end.
    prev: u32,
    /// Toward the least recently used end.
    next: u32,
    /// The key is in the index (false for [`StreamTable::insert_unindexed`] contexts).
    indexed: bool,
    val: T,
}

/// Per-stream contexts by key, at most `cap` of them; a new key beyond that replaces the least recently
/// used context (its stream then starts afresh, as a file that was closed and opened again).
#[derive(Debug)]
pub struct StreamTable<T> {
    map: HashMap<u64, u32, BlockHasher>,
    nodes: Vec<Node<T>>,
    /// Most recently used slot.
    head: u32,
    /// Least recently used slot.
    tail: u32,
    cap: usize,
    /// The most recently used key and its slot: consecutive requests of one stream skip the hash.
    last: Option<(u64, u32)>,
}

impl<T> StreamTable<T> {
    /// An empty table for at most `cap` contexts (at least 1).
    #[must_use]
    pub fn new(cap: usize) -> Self {
        let cap = cap.clamp(1, NIL as usize - 1);
        let pre = cap.min(1 << 16);
        Self {
            map: HashMap::with_capacity_and_hasher(pre, BlockHasher::with_seed(0x5eed_57e4)),
            nodes: Vec::with_capacity(pre),
            head: NIL,
            tail: NIL,
            cap,
            last: None,
        }
    }

    /// The context of `key`, made most recently used; created with `init` when absent (replacing the
    /// least recently used context when the table is full). Returns its slot and the context.
    #[inline]
    pub fn get_or_insert_with(&mut self, key: u64, init: impl FnOnce() -> T) -> (u32, &mut T) {
        if let Some((k, i)) = self.last {
            if k == key {
                return (i, &mut self.nodes[i as usize].val);
            }
        }
        self.find_or_insert(key, init)
    }

    /// [`StreamTable::get_or_insert_with`] for a key other than the last one.
    fn find_or_insert(&mut self, key: u64, init: impl FnOnce() -> T) -> (u32, &mut T) {
        if let Some(&i) = self.map.get(&key) {
            self.touch(key, i);
            return (i, &mut self.nodes[i as usize].val);
        }
        let i = self.place(key, init);
        self.map.insert(key, i);
        self.nodes[i as usize].indexed = true;
        (i, &mut self.nodes[i as usize].val)
    }

    /// The context in `slot` if it still belongs to `key`, made most recently used. With
    /// [`StreamTable::insert_unindexed`], a caller that remembers slots (the stream detector's tags) finds
    /// its contexts without hashing.
    #[inline]
    pub fn get_at(&mut self, slot: u32, key: u64) -> Option<&mut T> {
        if self.last == Some((key, slot)) {
            return Some(&mut self.nodes[slot as usize].val);
        }
        if self.nodes.get(slot as usize).is_none_or(|n| n.key != key) {
            return None;
        }
        self.touch(key, slot);
        Some(&mut self.nodes[slot as usize].val)
    }

    /// A new context for `key`, which must not be in the table, found later only by its slot
    /// ([`StreamTable::get_at`]), not by [`StreamTable::get`]: it costs no index update. Replaces the
    /// least recently used context when the table is full.
    pub fn insert_unindexed(&mut self, key: u64, init: impl FnOnce() -> T) -> (u32, &mut T) {
        let i = self.place(key, init);
        (i, &mut self.nodes[i as usize].val)
    }

    /// Make slot `i` (holding `key`) the most recently used.
    #[inline]
    fn touch(&mut self, key: u64, i: u32) {
        self.last = Some((key, i));
        if self.head != i {
            self.unlink(i);
            self.push_front(i);
        }
    }

    /// A slot for `key` with a fresh context, the most recently used; the index is the caller's.
    fn place(&mut self, key: u64, init: impl FnOnce() -> T) -> u32 {
        let i = if self.nodes.len() < self.cap {
            let i = self.nodes.len() as u32;
            self.nodes.push(Node { key, prev: NIL, next: NIL, indexed: false, val: init() });
            i
        } else {
            let i = self.tail;
            self.unlink(i);
            let node = &mut self.nodes[i as usize];
            if std::mem::take(&mut node.indexed) {
                let old = node.key;
                self.map.remove(&old);
            }
            let node = &mut self.nodes[i as usize];
            node.key = key;
            node.val = init();
            i
        };
        self.push_front(i);
        self.last = Some((key, i));
        i
    }

    /// Take slot `i` out of the recency order.
    #[inline]
    fn unlink(&mut self, i: u32) {
        let (p, n) = {
            let node = &self.nodes[i as usize];
            (node.prev, node.next)
        };
        if p == NIL {
            self.head = n;
        } else {
            self.nodes[p as usize].next = n;
        }
        if n == NIL {
            self.tail = p;
        } else {
            self.nodes[n as usize].prev = p;
        }
    }

    /// Put slot `i` (unlinked) at the most recently used end.
    #[inline]
    fn push_front(&mut self, i: u32) {
        let old = self.head;
        {
            let node = &mut self.nodes[i as usize];
            node.prev = NIL;
            node.next = old;
        }
        if old == NIL {
            self.tail = i;
        } else {
            self.nodes[old as usize].prev = i;
        }
        self.head = i;
    }

    /// The context of `key`, if present (no recency update).
    #[must_use]
    pub fn get(&self, key: u64) -> Option<&T> {
        self.map.get(&key).map(|&i| &self.nodes[i as usize].val)
    }

    /// The context in `slot` (as returned by [`StreamTable::get_or_insert_with`]).
    #[must_use]
    pub fn slot(&self, slot: u32) -> Option<&T> {
        self.nodes.get(slot as usize).map(|n| &n.val)
    }

    /// The context in `slot`, which must be in use (no recency update).
    pub fn slot_mut(&mut self, slot: u32) -> &mut T {
        &mut self.nodes[slot as usize].val
    }

    /// Number of contexts.
    #[must_use]
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// No context.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keys from most to least recently used.
    fn order<T>(t: &StreamTable<T>) -> Vec<u64> {
        let mut v = Vec::new();
        let mut i = t.head;
        while i != NIL {
            v.push(t.nodes[i as usize].key);
            i = t.nodes[i as usize].next;
        }
        v
    }

    #[test]
    fn the_stream_table_replaces_the_least_recently_used_context() {
        let mut t: StreamTable<u32> = StreamTable::new(2);
        *t.get_or_insert_with(1, || 10).1 += 1;
        t.get_or_insert_with(2, || 20);
        t.get_or_insert_with(1, || 0); // 1 is now the most recent
        t.get_or_insert_with(3, || 30); // replaces 2
        assert_eq!((t.get(1), t.get(2), t.get(3)), (Some(&11), None, Some(&30)));
        assert_eq!(t.len(), 2);
        assert_eq!(order(&t), vec![3, 1]);
    }

    #[test]
    fn recency_order_follows_every_use_and_replacement() {
        let mut t: StreamTable<u64> = StreamTable::new(4);
        for k in 1..=4 {
            t.get_or_insert_with(k, || k);
        }
        assert_eq!(order(&t), vec![4, 3, 2, 1]);
        t.get_or_insert_with(2, || 0); // middle to front
        t.get_or_insert_with(1, || 0); // tail to front
        assert_eq!(order(&t), vec![1, 2, 4, 3]);
        let (s, _) = t.get_or_insert_with(5, || 5); // replaces 3, the least recently used
        assert_eq!(order(&t), vec![5, 1, 2, 4]);
        assert_eq!(t.get(3), None);
        assert_eq!(t.slot(s), Some(&5));
        let (u, _) = t.insert_unindexed(6, || 6); // replaces 4
        assert_eq!(order(&t), vec![6, 5, 1, 2]);
        assert_eq!(t.get(4), None, "the replaced key left the index");
        assert_eq!(t.get_at(u, 6).copied(), Some(6));
        assert_eq!(t.len(), 4);
    }

    #[test]
    fn unindexed_contexts_are_found_by_slot_until_their_slot_is_reused() {
        let mut t: StreamTable<u32> = StreamTable::new(2);
        let (a, _) = t.insert_unindexed(100, || 1);
        let (b, _) = t.get_or_insert_with(7, || 2);
        assert_eq!(t.get(100), None, "an unindexed context is not found by key");
        assert_eq!(t.get_at(a, 100).copied(), Some(1));
        assert_eq!(t.get_at(a, 101), None, "the slot holds another key");
        assert_eq!(t.get_at(b, 7).copied(), Some(2));
        // get_at(b) made 7 the most recently used, so 100 is the least recently used context.
        let (c, _) = t.insert_unindexed(200, || 3);
        assert_eq!(c, a, "the least recently used slot is reused");
        assert_eq!(t.get_at(a, 100), None);
        assert_eq!(t.get(7), Some(&2));
        // Replacing an indexed context removes its key from the index.
        t.get_at(c, 200);
        let (d, _) = t.insert_unindexed(300, || 4);
        assert_eq!(d, b);
        assert_eq!(t.get(7), None);
        assert_eq!(*t.get_or_insert_with(7, || 5).1, 5, "7 starts afresh");
        assert_eq!(t.len(), 2);
    }
}
