//! The network between cache levels: PFC's `alpha + beta * pages` cost per message (Zhang et al.,
//! ICDCS 2008 §4.1, a reduction of LogP/LogGP), with an optional FIFO link per direction for
//! contention (`shared/docs/models/network.md`).
//!
//! Engine-agnostic: [`Link::send`] a message at `now` and get its arrival time. With `link = none`
//! messages are pure delays and may overtake each other; with `link = fifo` each direction serialises
//! the per-page part (plus the LogP gap), so arrivals keep send order.

use serde::{Deserialize, Serialize};

use crate::component::ConfigError;
use crate::device::ms_to_ns;

/// Who pays `alpha`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChargeMode {
    /// Every message pays `alpha + beta * pages` (default; a 1-page L2 hit costs 2 alpha + beta).
    #[default]
    PerMessage,
    /// A request/response pair pays `alpha` once: `ReadReq` is free, `ReadResp` pays
    /// `alpha + beta * pages`; messages without a reply pay like `PerMessage`.
    PerExchange,
}

/// Contention model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LinkModel {
    /// Pure delay, unlimited concurrency (PFC: the network is not the bottleneck) (default).
    #[default]
    None,
    /// One server per direction: the per-page part and the gap are serialised in send order.
    Fifo,
}

/// When the server answers a request whose blocks become ready at different times (engine rule).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RespGranularity {
    /// One `ReadResp` when the last block is ready (default).
    #[default]
    Whole,
    /// One `ReadResp` per maximal run of blocks as it becomes ready (each pays `alpha`).
    PerRun,
}

/// Link parameters (defaults: PFC §4.1, network.md §4).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LinkParams {
    /// Fixed cost per message, ms (default 6.0, PFC).
    pub alpha_ms: f64,
    /// Cost per page, ms (default 0.03, PFC).
    pub beta_ms_per_page: f64,
    /// Bytes per page for [`Link::pages_for_bytes`] (default 4096).
    pub page_bytes: u32,
    /// Who pays alpha (default `per_message`).
    pub charge_mode: ChargeMode,
    /// Contention (default `none`).
    pub link: LinkModel,
    /// LogP gap added to each message's link occupancy, ms (default 0; `fifo` only).
    pub gap_ms: f64,
    /// Response granularity (default `whole`; applied by the engine).
    pub resp: RespGranularity,
    /// L1 lookup cost per request, ms (default 0; applied by the engine).
    pub t_l1_hit_ms: f64,
    /// L2 processing before its lookup, ms (default 0; applied by the engine).
    pub t_l2_cpu_ms: f64,
}

impl Default for LinkParams {
    fn default() -> Self {
        Self {
            alpha_ms: 6.0,
            beta_ms_per_page: 0.03,
            page_bytes: 4096,
            charge_mode: ChargeMode::PerMessage,
            link: LinkModel::None,
            gap_ms: 0.0,
            resp: RespGranularity::Whole,
            t_l1_hit_ms: 0.0,
            t_l2_cpu_ms: 0.0,
        }
    }
}

impl LinkParams {
    /// Check the parameters; `path` names the key in errors.
    pub fn validate(&self, path: &str) -> Result<(), ConfigError> {
        for (k, x) in [
            ("alpha_ms", self.alpha_ms),
            ("beta_ms_per_page", self.beta_ms_per_page),
            ("gap_ms", self.gap_ms),
            ("t_l1_hit_ms", self.t_l1_hit_ms),
            ("t_l2_cpu_ms", self.t_l2_cpu_ms),
        ] {
            if !(x.is_finite() && x >= 0.0) {
                return Err(ConfigError::new(format!("{path}.{k}"), format!("must be a finite number >= 0, got {x}")));
            }
        }
        if self.page_bytes == 0 {
            return Err(ConfigError::new(format!("{path}.page_bytes"), "must be at least 1"));
        }
        Ok(())
    }
}

/// Message types (network.md §2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MsgKind {
    /// L1 -> L2 read request (0 pages).
    ReadReq,
    /// L2 -> L1 data.
    ReadResp,
    /// L1 -> L2 demoted blocks (DEMOTE).
    Demote,
    /// L1 -> L2 eviction notice (eviction-based placement; ids only).
    EvictNotice,
    /// L1 -> L2 hint.
    Hint,
}

/// Direction of a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    /// Client to server.
    Down = 0,
    /// Server to client.
    Up = 1,
}

impl MsgKind {
    /// Which way it travels.
    #[must_use]
    pub fn dir(self) -> Dir {
        if self == MsgKind::ReadResp {
            Dir::Up
        } else {
            Dir::Down
        }
    }
}

/// Link counters.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LinkStats {
    /// Messages sent.
    pub messages: u64,
    /// Pages carried.
    pub pages: u64,
    /// Sum of (arrival - send), ns.
    pub delay_ns: u64,
    /// Sum of the time messages waited for a busy link (`fifo`), ns.
    pub contention_ns: u64,
}

/// One client <-> server link.
#[derive(Clone, Debug)]
pub struct Link {
    p: LinkParams,
    link_free: [u64; 2],
    stats: LinkStats,
}

impl Link {
    /// A link; `path` names the config key in errors.
    pub fn new(params: LinkParams, path: &str) -> Result<Self, ConfigError> {
        params.validate(path)?;
        Ok(Self { p: params, link_free: [0; 2], stats: LinkStats::default() })
    }

    /// Parameters in force.
    #[must_use]
    pub fn params(&self) -> &LinkParams {
        &self.p
    }

    /// Counters.
    #[must_use]
    pub fn stats(&self) -> &LinkStats {
        &self.stats
    }

    /// Pages needed for `bytes` (partial pages round up).
    #[must_use]
    pub fn pages_for_bytes(&self, bytes: u64) -> u32 {
        bytes.div_ceil(u64::from(self.p.page_bytes)).min(u64::from(u32::MAX)) as u32
    }

    /// Whether `kind` pays alpha under the charge mode.
    fn pays_alpha(&self, kind: MsgKind) -> bool {
        !(self.p.charge_mode == ChargeMode::PerExchange && kind == MsgKind::ReadReq)
    }

    /// Transfer delay of a message without contention, ms.
    #[must_use]
    pub fn delay_ms(&self, kind: MsgKind, pages: u32) -> f64 {
        let alpha = if self.pays_alpha(kind) { self.p.alpha_ms } else { 0.0 };
        alpha + self.p.beta_ms_per_page * f64::from(pages)
    }

    /// Send a message of `pages` pages at `now`; returns its arrival time (ns).
    pub fn send(&mut self, kind: MsgKind, pages: u32, now: u64) -> u64 {
        let delay = ms_to_ns(self.delay_ms(kind, pages));
        let start = match self.p.link {
            LinkModel::None => now,
            LinkModel::Fifo => {
                let d = kind.dir() as usize;
                let start = now.max(self.link_free[d]);
                // Saturating: messages sent before the clock check sees an absurd time must not wrap it.
                self.link_free[d] =
                    start.saturating_add(ms_to_ns(self.p.beta_ms_per_page * f64::from(pages) + self.p.gap_ms));
                start
            }
        };
        let arrive = start.saturating_add(delay);
        self.stats.messages += 1;
        self.stats.pages += u64::from(pages);
        self.stats.delay_ns = self.stats.delay_ns.saturating_add(arrive - now);
        self.stats.contention_ns = self.stats.contention_ns.saturating_add(start - now);
        arrive
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn link(p: LinkParams) -> Link {
        Link::new(p, "link").unwrap()
    }

    #[test]
    fn per_message_charges_alpha_plus_beta_pages_each_way() {
        let mut l = link(LinkParams::default());
        // network.md §5: L1 miss, L2 hit, 1 page = 6 + 6.03 = 12.03 ms.
        let req_at = l.send(MsgKind::ReadReq, 0, 0);
        assert_eq!(req_at, 6 * MS);
        let resp_at = l.send(MsgKind::ReadResp, 1, req_at);
        assert_eq!(resp_at, 12_030_000);
        // A 32-page prefetch answered from L2: 6 + 6 + 0.96 = 12.96 ms.
        let t = l.send(MsgKind::ReadReq, 0, 0);
        assert_eq!(l.send(MsgKind::ReadResp, 32, t), 12_960_000);
        // DEMOTE of one page: 6.03 ms; zero-page messages still pay alpha.
        assert_eq!(l.send(MsgKind::Demote, 1, 0), 6_030_000);
        assert_eq!(l.send(MsgKind::EvictNotice, 0, 0), 6 * MS);
        assert_eq!(l.stats().messages, 6);
    }

    #[test]
    fn per_exchange_charges_alpha_once_per_pair() {
        let mut l = link(LinkParams { charge_mode: ChargeMode::PerExchange, ..LinkParams::default() });
        let req_at = l.send(MsgKind::ReadReq, 0, 0);
        assert_eq!(req_at, 0);
        assert_eq!(l.send(MsgKind::ReadResp, 1, req_at), 6_030_000);
        // Messages without a reply still pay alpha.
        assert_eq!(l.send(MsgKind::Demote, 2, 0), 6_060_000);
        assert_eq!(l.send(MsgKind::Hint, 0, 0), 6 * MS);
    }

    #[test]
    fn no_contention_lets_messages_overlap_and_overtake() {
        let mut l = link(LinkParams::default());
        let big = l.send(MsgKind::ReadResp, 100, 0); // 9 ms
        let small = l.send(MsgKind::ReadResp, 1, MS); // 1 + 6.03 ms
        assert_eq!(big, 9 * MS);
        assert!(small < big);
    }

    #[test]
    fn fifo_link_serialises_the_per_page_part_per_direction() {
        let mut l = link(LinkParams { link: LinkModel::Fifo, gap_ms: 0.01, ..LinkParams::default() });
        // Two 100-page responses sent together: the second waits 3 ms + gap for the link.
        let a = l.send(MsgKind::ReadResp, 100, 0);
        let b = l.send(MsgKind::ReadResp, 100, 0);
        assert_eq!(a, 9 * MS);
        assert_eq!(b, 3_010_000 + 9 * MS);
        // The other direction is independent; a zero-page message occupies the gap only.
        assert_eq!(l.send(MsgKind::ReadReq, 0, 0), 6 * MS);
        assert_eq!(l.send(MsgKind::ReadReq, 0, 0), 6 * MS + 10_000);
        assert_eq!(l.stats().contention_ns, 3_010_000 + 10_000);
        // Arrival order equals send order in one direction.
        let mut last = 0;
        for i in 0..50u32 {
            let t = l.send(MsgKind::ReadResp, (i * 7) % 13, u64::from(i) * 100_000);
            assert!(t >= last);
            last = t;
        }
    }

    #[test]
    fn pages_round_up_and_bad_params_name_the_key() {
        let l = link(LinkParams::default());
        assert_eq!(l.pages_for_bytes(1), 1);
        assert_eq!(l.pages_for_bytes(8192), 2);
        assert_eq!(l.pages_for_bytes(8193), 3);
        let e = Link::new(LinkParams { alpha_ms: -1.0, ..LinkParams::default() }, "link").unwrap_err();
        assert_eq!(e.path, "link.alpha_ms");
        let v = serde_json::json!({"alpha_ms": 1.0, "betta": 2});
        let e = serde_json::from_value::<LinkParams>(v).unwrap_err();
        assert!(e.to_string().contains("betta"));
    }
}
