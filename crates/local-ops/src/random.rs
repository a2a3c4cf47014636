//! Random names for temporary files and process markers, from the kernel
//! (`getrandom`). They only make collisions rare: whoever uses one still
//! checks (`O_EXCL`, an exact match), so a kernel that cannot answer costs
//! randomness, not correctness.

use std::sync::atomic::{AtomicU64, Ordering};

/// 16 hex digits: 8 bytes from the kernel; if it cannot give them, this
/// process's id and a counter.
pub(crate) fn random_hex() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = getrandom::u64().unwrap_or_else(|_| {
        (u64::from(std::process::id()) << 32) ^ COUNTER.fetch_add(1, Ordering::Relaxed)
    });
    format!("{n:016x}")
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_differ_and_have_sixteen_hex_digits() {
        let (a, b) = (super::random_hex(), super::random_hex());
        assert_ne!(a, b);
        assert!(a.len() == 16 && a.chars().all(|c| c.is_ascii_hexdigit()));
    }
}
