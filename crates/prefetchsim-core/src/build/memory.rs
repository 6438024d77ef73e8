//! The memory estimate: levels whose metadata alone would not fit in the machine's memory are refused
//! before their tables are allocated (an allocation that fails aborts the process, a Python session
//! with it, instead of returning an error). The figure per block is each policy's
//! [`bytes_per_block`](super::registry::PolicyEntry::bytes_per_block).

use super::registry;
use crate::component::ConfigError;
use crate::config::HierarchyConfig;

/// The machine's physical memory in bytes, when the system says (Linux `/proc/meminfo`).
pub fn physical_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// Refuse levels of `cfg` (capacities `caps` in blocks) whose metadata would not fit in `memory` bytes
/// (no check when it is unknown). A policy name the registry does not know is left to the build, which
/// reports it in level order.
pub fn check_memory(cfg: &HierarchyConfig, caps: &[u64], memory: Option<u64>) -> Result<(), ConfigError> {
    let Some(memory) = memory else { return Ok(()) };
    let mut total = 0u64;
    for (i, (l, &cap)) in cfg.level.iter().zip(caps).enumerate() {
        let Ok(entry) = registry::policy(&format!("level[{i}].policy"), &l.policy.name) else { continue };
        let per = entry.bytes_per_block;
        // K servers are K caches; a per-client level counts one (its clients are not known yet).
        let cap = cap.saturating_mul(u64::from(l.instances.max(1)));
        total = total.saturating_add(cap.saturating_mul(per));
        if total > memory {
            let gib = |b: u64| b as f64 / f64::from(1u32 << 30);
            return Err(ConfigError::new(
                format!("level[{i}].size"),
                format!(
                    "{cap} blocks need about {:.1} GiB of cache metadata ({per} B per block of '{}'{}), more than \
                     this machine's {:.1} GiB of memory",
                    gib(cap.saturating_mul(per)),
                    l.policy.name,
                    if i > 0 { ", with the levels above" } else { "" },
                    gib(memory)
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_larger_than_memory_are_refused_before_allocating() {
        let cfg = HierarchyConfig::from_toml("[[level]]\nsize = 1000\n[[level]]\nsize = '4000000x'\npolicy = 'arc'\n")
            .unwrap();
        let e = check_memory(&cfg, &[1000, 4_000_000_000], Some(24 << 30)).unwrap_err();
        assert_eq!(e.path, "level[1].size");
        assert!(e.message.contains("4000000000 blocks need about 372.5 GiB"), "{e}");
        assert!(e.message.contains("more than this machine's 24.0 GiB"), "one space, not a run of them: {e}");
        assert!(check_memory(&cfg, &[1000, 1_000_000], Some(24 << 30)).is_ok());
        assert!(check_memory(&cfg, &[1000, 4_000_000_000], None).is_ok(), "no check where memory is unknown");
        assert!(physical_memory().is_none_or(|m| m > 1 << 20));
    }
}
